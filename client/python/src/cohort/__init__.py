"""Python client for Cohort, a content-based publish/subscribe service.

    import cohort
    from cohort import F

    with cohort.Client("127.0.0.1:50051") as c:
        [sid] = c.subscribe("alice", "price <= 500 and kind = 7")
        [sid2] = c.subscribe("alice", (F("price") <= 500) & (F("kind") == 7))
        [sid3] = c.subscribe("alice", (F("kind") == 7) | (F("vip") == 1))
        print(c.publish({"price": 420, "kind": 7}, return_ids=True))

cohort.Client is the blocking client, cohort.aio.Client its asyncio twin.
F builds typed filters (& "and", | "or"); matches() is a pure-Python
reference matcher; the exceptions carry the gRPC status (CohortError and
its subclasses); cohort.v1.pubsub_pb2 holds the generated messages. See
README.md.
"""

from cohort._client import (DEFAULT_BATCH, DEFAULT_TIMEOUT, DEFAULT_WINDOW,
                            Client, Listener)
from cohort._convert import (AttributeValue, Delivery, EventLike, FilterLike,
                             Payload, StreamItem, publish_requests)
from cohort._errors import (Cancelled, CohortError, DeadlineExceeded, Internal,
                            InvalidArgument, NotFound, PermissionDenied,
                            ResourceExhausted, Unauthenticated, Unavailable,
                            Unimplemented, from_rpc_error)
from cohort._filters import (MAX_ALTERNATIVES, F, Filter, Value,
                             format_filter, format_predicate,
                             format_predicates)
from cohort._options import TLS, Retry
from cohort.matching import matches

__version__ = "0.1.0"

__all__ = [
    "AttributeValue",
    "Cancelled",
    "Client",
    "CohortError",
    "DEFAULT_BATCH",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WINDOW",
    "DeadlineExceeded",
    "Delivery",
    "EventLike",
    "F",
    "Filter",
    "FilterLike",
    "Internal",
    "InvalidArgument",
    "Listener",
    "MAX_ALTERNATIVES",
    "NotFound",
    "Payload",
    "PermissionDenied",
    "ResourceExhausted",
    "Retry",
    "StreamItem",
    "TLS",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Value",
    "format_filter",
    "format_predicate",
    "format_predicates",
    "from_rpc_error",
    "matches",
    "publish_requests",
]
