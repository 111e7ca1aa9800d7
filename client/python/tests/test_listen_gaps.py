"""A slow listener loses deliveries, and Delivery.gap accounts for each.

Property: under --listener_queue_limit=8 --slow_listener=drop, a listener
that does not read while a burst is published sees gaps in its sequence;
the deliveries received plus the gaps reported add up to every delivery
meant for the stream (the sequence of a final marker event), and the gaps
add up to the server's dropped_deliveries.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Iterator, List

import pytest

import cohort
from cohort import F
from helpers import Server, wait_for_listeners

BURST = 2000
PAYLOAD = b"x" * 8192  # 16 MB in all: far more than gRPC's buffers hold


@pytest.fixture()
def small_queue_server() -> Iterator[Server]:
    s = Server("--listener_queue_limit=8", "--slow_listener=drop",
               "--partitions=2")
    yield s
    s.stop()


def dropped(client: cohort.Client) -> int:
    return sum(stage.dropped_deliveries for stage in client.stats().stages)


def test_gaps_add_up(small_queue_server: Server) -> None:
    with cohort.Client(small_queue_server.target) as c:
        [sid] = c.subscribe("slow", F("n").exists())
        listener = c.listen("slow")
        wait_for_listeners(c, 1)
        for start in range(0, BURST, 100):  # nobody reads meanwhile
            c.publish([{
                "n": i
            } for i in range(start, start + 100)],
                      payload=PAYLOAD)

        received: "queue.Queue[cohort.Delivery]" = queue.Queue()

        def read() -> None:
            for d in listener:
                received.put(d)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        got: List[cohort.Delivery] = []
        while True:  # drain what the server kept
            try:
                got.append(received.get(timeout=1.0))
            except queue.Empty:
                break
        c.publish({"n": -1})  # the marker, read while the queue is empty
        deadline = time.monotonic() + 10
        while not got or got[-1].attributes["n"] != -1:
            got.append(
                received.get(timeout=max(0.1, deadline - time.monotonic())))
        listener.cancel()
        reader.join(timeout=10)

        marker = got[-1]
        assert marker.sequence == BURST + 1  # every matched event took a number
        sequences = [d.sequence for d in got]
        assert sequences == sorted(set(sequences))
        gaps = sum(d.gap for d in got)
        assert gaps > 0, "the burst should have overflowed the listener's queue"
        assert len(got) + gaps == marker.sequence
        assert (listener.received, listener.missed,
                listener.last_sequence) == (len(got), gaps, marker.sequence)
        assert gaps == dropped(c)
        assert all(d.subscription_ids == [sid] for d in got)
        assert len({d.attributes["n"] for d in got}) == len(got)
