"""Exceptions raised for failed calls: one class per gRPC status code.

Every failed RPC raises a CohortError (or a subclass named after its
status code) carrying the code and the server's message, e.g.

    try:
        client.unsubscribe([12345])
    except cohort.NotFound as e:
        print(e.code, e.details)  # NOT_FOUND, "subscription_ids[0]: ..."

Mistakes the client can see before calling (a bool attribute value, an
int outside int64, a payload that is not bytes) raise TypeError or
ValueError instead, without a call.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

import grpc


class CohortError(Exception):
    """A call failed with a gRPC status other than OK.

    Attributes:
      code: the grpc.StatusCode.
      details: the server's message (for INVALID_ARGUMENT it names the
        offending field, e.g. "subscriptions[0].predicates[1].op").
      debug: gRPC's debug string, if any (for logs, not for matching).
    """

    def __init__(self,
                 code: grpc.StatusCode,
                 details: str,
                 debug: Optional[str] = None) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.debug = debug


class InvalidArgument(CohortError):
    """INVALID_ARGUMENT: bad input; the message names the field."""


class NotFound(CohortError):
    """NOT_FOUND: e.g. Unsubscribe of an id that is not live."""


class ResourceExhausted(CohortError):
    """RESOURCE_EXHAUSTED: overloaded or a limit reached; back off and retry."""


class Unavailable(CohortError):
    """UNAVAILABLE: cannot connect, or the service is shutting down."""


class PermissionDenied(CohortError):
    """PERMISSION_DENIED: the token may not act as that subscriber/publisher."""


class Unauthenticated(CohortError):
    """UNAUTHENTICATED: a token is needed and missing, or unknown."""


class DeadlineExceeded(CohortError):
    """DEADLINE_EXCEEDED: the call's deadline passed."""


class Cancelled(CohortError):
    """CANCELLED: the call was cancelled."""


class Unimplemented(CohortError):
    """UNIMPLEMENTED: the server does not know the RPC (an older cohortd)."""


class Internal(CohortError):
    """INTERNAL: a bug or a broken connection; see details."""


_BY_CODE: Dict[grpc.StatusCode, Type[CohortError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.INTERNAL: Internal,
}


def error_for(code: grpc.StatusCode,
              details: str,
              debug: Optional[str] = None) -> CohortError:
    """The exception for a status: the subclass for its code, or CohortError."""
    return _BY_CODE.get(code, CohortError)(code, details, debug)


def status_code(error: grpc.RpcError) -> grpc.StatusCode:
    """The status code of a failed call (sync or asyncio)."""
    code = getattr(error, "code", None)
    result = code() if callable(code) else None
    return result if isinstance(result,
                                grpc.StatusCode) else grpc.StatusCode.UNKNOWN


def from_rpc_error(error: grpc.RpcError) -> CohortError:
    """Converts a grpc.RpcError (sync or grpc.aio) into a CohortError."""
    details = getattr(error, "details", None)
    text = details() if callable(details) else None
    debug = getattr(error, "debug_error_string", None)
    debug_text = debug() if callable(debug) else None
    return error_for(status_code(error), text if isinstance(text, str) else "",
                     debug_text if isinstance(debug_text, str) else None)
