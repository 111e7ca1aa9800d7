"""Python values to and from cohort.v1 messages (shared by both clients).

Events are given as mappings {"price": 420, "kind": "order"} (int: an
int64 value; float: a number that may have a fraction, sent as a double;
str: its UTF-8 bytes as a string value; bytes: a string value), as nested
mappings (a value that is a dict, list, tuple, bool or None makes the whole
mapping a JSON event, sent as Event.json) or as prebuilt pb.Event messages; filters as CLI text (parsed by the
server), an Event Ruler pattern or SNS filter policy (a dict, sent to the
server as JSON), a Filter (predicates and "or" groups), one pb.Predicate or
a sequence of them. This module
holds the conversions, the request builders of the publish paths (the hot
path of publish_stream: one upb call per attribute) and Delivery.
"""

from __future__ import annotations

import json
from typing import (Any, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Union)

from cohort._filters import Filter, operand
from cohort.v1 import pubsub_pb2 as pb

# An attribute value: an int64, a float, or a string (str as UTF-8, or
# bytes).
AttributeValue = Union[int, float, str, bytes]
# An event: attribute name -> value, a nested mapping (a JSON event: any
# JSON value), or a prebuilt message.
EventLike = Union[Mapping[str, AttributeValue], Mapping[str, Any], pb.Event]
# A filter: CLI text or a pattern (both sent to ParseFilter), a Filter (with
# "or" groups or without), or pb predicates (a conjunction).
FilterLike = Union[str, Mapping[str, Any], Filter, pb.Predicate,
                   Sequence[pb.Predicate]]
# A payload for every event, or one per event.
Payload = Union[bytes, Sequence[bytes], None]


def fill_event(event: pb.Event, attributes: Mapping[str, Any]) -> None:
    """Appends attributes to event.attributes (the publish hot path)."""
    add = event.attributes.add
    name = ""
    try:
        for name, value in attributes.items():
            kind = type(value)
            if kind is int:
                add(name=name, value=value)  # upb: ValueError outside int64
            elif kind is str:
                add(name=name, string_value=value.encode())
            elif kind is bytes:
                add(name=name, string_value=value)
            elif isinstance(value, (Mapping, list, tuple, bool)) or (
                    value is None):
                # Nested: the whole mapping is a JSON event (Event.json).
                del event.attributes[:]
                fill_json(event, attributes)
                return
            else:
                typed = operand(value, f"attribute {name!r}")
                if isinstance(typed, int):
                    add(name=name, value=typed)
                elif isinstance(typed, float):
                    add(name=name, double_value=typed)
                else:
                    add(name=name, string_value=typed)
    except ValueError as e:
        raise ValueError(f"attribute {name!r}: {e}") from None
    except TypeError as e:
        if str(e).startswith("attribute "):
            raise
        raise TypeError(f"attribute {name!r}: {e}") from None


def fill_json(event: pb.Event, document: Mapping[str, Any]) -> None:
    """Sets event.json to `document` as JSON (a JSON event: the server
    names its values by path, "detail.price", and an array gives its path
    several values). NaN and the infinities are refused here (ValueError),
    as the server would."""
    try:
        text = json.dumps(document, ensure_ascii=False, allow_nan=False,
                          separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise type(e)(f"event: not a JSON document: {e}") from None
    event.json = text.encode()


def to_event(item: EventLike, payload: Optional[bytes] = None) -> pb.Event:
    """A pb.Event for a mapping (with payload) or the message itself."""
    if isinstance(item, pb.Event):
        return item
    if not isinstance(item, Mapping):
        raise TypeError("event: expected a mapping or cohort.v1 Event, got "
                        f"{type(item).__name__}")
    event = pb.Event()
    fill_event(event, item)
    if payload:
        event.payload = payload
    return event


def _payloads(payload: Payload, count: int) -> Sequence[Optional[bytes]]:
    if payload is None:
        return [None] * count
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return [bytes(payload)] * count
    if isinstance(payload, str):
        raise TypeError(
            "payload: bytes (encode the str), or a sequence of bytes")
    payloads = list(payload)
    if len(payloads) != count:
        raise ValueError(
            f"payload: {len(payloads)} payloads for {count} events")
    for i, p in enumerate(payloads):
        if not isinstance(p, (bytes, bytearray, memoryview)):
            raise TypeError(f"payload[{i}]: bytes, got {type(p).__name__}")
    return [bytes(p) for p in payloads]


def publish_request(events: Union[EventLike, Iterable[EventLike]],
                    payload: Payload, return_ids: bool) -> pb.PublishRequest:
    """The PublishRequest of Client.publish (see there for the forms)."""
    items: List[EventLike] = ([events] if isinstance(
        events, (Mapping, pb.Event)) else list(events))
    request = pb.PublishRequest(return_ids=return_ids)
    for item, p in zip(items, _payloads(payload, len(items))):
        if isinstance(item, pb.Event):
            request.events.append(item)  # copies; its own payload
        elif isinstance(item, Mapping):
            event = request.events.add()
            fill_event(event, item)
            if p:
                event.payload = p
        else:
            raise TypeError("event: expected a mapping or cohort.v1 Event, "
                            f"got {type(item).__name__}")
    return request


StreamItem = Union[Mapping[str, AttributeValue], Mapping[str, Any], pb.Event,
                   pb.PublishRequest]


class Batcher:
    """Groups publish_stream items into PublishRequests of `batch` events.

    push(item) returns the requests that are complete (usually none); a
    PublishRequest item is passed through as it is, after the events
    before it; flush() returns the last, partial one.
    """

    __slots__ = ("_batch", "_return_ids", "_payload", "_request", "_add",
                 "_count")

    def __init__(self, batch: int, return_ids: bool,
                 payload: Optional[bytes]) -> None:
        if batch < 1:
            raise ValueError("batch: at least 1 event per request")
        if payload is not None and not isinstance(payload, bytes):
            raise TypeError("payload: bytes shared by every event (per-event "
                            "payloads: pass cohort.v1 Events)")
        self._batch = batch
        self._return_ids = return_ids
        self._payload = payload
        self._new()

    def _new(self) -> None:
        self._request = pb.PublishRequest(return_ids=self._return_ids)
        self._add = self._request.events.add
        self._count = 0

    def push(self, item: StreamItem) -> Sequence[pb.PublishRequest]:
        if type(item) is dict or isinstance(item, Mapping):
            event = self._add()
            fill_event(event, item)
            if self._payload:
                event.payload = self._payload
        elif isinstance(item, pb.Event):
            self._request.events.append(item)
        elif isinstance(item, pb.PublishRequest):
            return (*self.flush(), item)
        else:
            raise TypeError(
                "publish_stream: items are mappings, cohort.v1 Events or "
                f"PublishRequests, got {type(item).__name__}")
        self._count += 1
        if self._count < self._batch:
            return ()
        full = self._request
        self._new()
        return (full,)

    def flush(self) -> Sequence[pb.PublishRequest]:
        if self._count == 0:
            return ()
        full = self._request
        self._new()
        return (full,)


def batch_requests(items: Iterable[StreamItem], batch: int, return_ids: bool,
                   payload: Optional[bytes]) -> Iterator[pb.PublishRequest]:
    """The PublishRequests of items, in order (see Batcher).

    Checks batch and payload at once; reads items only when iterated.
    """
    batcher = Batcher(batch, return_ids, payload)

    def requests() -> Iterator[pb.PublishRequest]:
        for item in items:
            yield from batcher.push(item)
        yield from batcher.flush()

    return requests()


def publish_requests(
        events: Iterable[StreamItem],
        batch: int = 64,
        return_ids: bool = False,
        payload: Optional[bytes] = None) -> List[pb.PublishRequest]:
    """Prebuilds the PublishRequests that publish_stream would send.

    Passing them to publish_stream later moves all per-event work out of
    the publishing loop (e.g. build while idle, publish at full rate).
    """
    return list(batch_requests(events, batch, return_ids, payload))


def filter_text(filter: FilterLike) -> Optional[str]:
    """The text ParseFilter takes for filter, or None if it needs none.

    CLI text is itself; a pattern (a mapping) is its JSON, which the server
    tells from CLI text by its first character, '{'.
    """
    if isinstance(filter, str):
        return filter
    if isinstance(filter, Mapping):
        try:
            return json.dumps(filter, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            raise type(e)(f"pattern: {e}") from None
    return None


def to_filter(filter: FilterLike) -> Filter:
    """The Filter of a filter that is no text (text goes to ParseFilter):
    a Filter itself, one pb.Predicate, or a non-empty sequence of them (a
    conjunction)."""
    if isinstance(filter, Filter):
        return filter
    if isinstance(filter, pb.Predicate):
        return Filter((filter,))
    if isinstance(filter, (str, bytes, Mapping)):
        raise TypeError("a text filter or a pattern is parsed by the server "
                        "(Client.parse_filter)")
    result = list(filter)
    for i, p in enumerate(result):
        if not isinstance(p, pb.Predicate):
            raise TypeError(f"filter[{i}]: expected cohort.v1 Predicate, "
                            f"got {type(p).__name__}")
    if not result:
        raise ValueError("filter: at least one predicate")
    return Filter(result)


# A JSON literal as Python has it, by pb.Literal number.
LITERALS: Dict[int, Optional[bool]] = {
    pb.LITERAL_TRUE: True, pb.LITERAL_FALSE: False, pb.LITERAL_NULL: None}
# An attribute's value as attributes_of gives it.
Scalar = Union[int, float, bytes, bool, None]


def attributes_of(event: pb.Event) -> Dict[str, Scalar]:
    """An event's attributes as name -> int, float, bytes, or a literal
    (True, False, None)."""
    out: Dict[str, Scalar] = {}
    for a in event.attributes:
        kind = a.WhichOneof("kind")
        out[a.name] = (a.string_value if kind == "string_value" else
                       a.double_value if kind == "double_value" else
                       LITERALS.get(a.literal_value)
                       if kind == "literal_value" else a.value)
    return out


class Delivery:
    """One event delivered to a listener.

    Attributes:
      subscription_ids: the listener's subscriptions the event matched.
      event: the event as published (cohort.v1 Event, payload included).
      sequence: Delivery.sequence, the position on this stream (from 1).
      gap: deliveries meant for this stream that were dropped just before
        this one because the listener fell behind (sequence - previous - 1;
        0 when none was lost).
    """

    __slots__ = ("subscription_ids", "event", "sequence", "gap")

    def __init__(self, subscription_ids: List[int], event: pb.Event,
                 sequence: int, gap: int) -> None:
        self.subscription_ids = subscription_ids
        self.event = event
        self.sequence = sequence
        self.gap = gap

    @property
    def attributes(self) -> Dict[str, Scalar]:
        """The event's attributes: name -> int, float, bytes, or a literal
        (True, False, None)."""
        return attributes_of(self.event)

    @property
    def payload(self) -> bytes:
        return self.event.payload

    def __repr__(self) -> str:
        return (f"Delivery(sequence={self.sequence}, gap={self.gap}, "
                f"subscription_ids={self.subscription_ids}, "
                f"attributes={self.attributes!r}, payload={self.payload!r})")


class SequenceTracker:
    """Turns Delivery.sequence into gaps and keeps the stream's totals."""

    __slots__ = ("last_sequence", "received", "missed")

    def __init__(self) -> None:
        self.last_sequence = 0
        self.received = 0
        self.missed = 0

    def delivery(self, message: pb.Delivery) -> Delivery:
        sequence = message.sequence
        last = self.last_sequence
        gap = sequence - last - 1 if sequence > last else 0
        self.last_sequence = max(self.last_sequence, sequence)
        self.received += 1
        self.missed += gap
        return Delivery(list(message.subscription_ids), message.event, sequence,
                        gap)
