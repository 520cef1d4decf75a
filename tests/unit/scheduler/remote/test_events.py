"""Events as client-go's recorder writes them: repeats of one event become a series."""

from __future__ import annotations

import asyncio
from typing import Any

from kubesched.cluster.kubeclient import AnswerLost, APIError, Fenced, TransportError
from kubesched.scheduler.remote.events import FINISH_TIME, EventRecorder


class FakeServer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.missing = False

    async def __call__(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        self.calls.append((method, path, body))
        if method == "PATCH" and self.missing:
            raise APIError(404, "not found")
        return b"{}"


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def event(note: str = "0/1 nodes are available", uid: str = "u1", reason: str = "FailedScheduling") -> dict[str, Any]:
    return {
        "metadata": {"name": f"p.{uid}.{note[:3]}", "namespace": "ns"},
        "type": "Warning",
        "action": "Scheduling",
        "reason": reason,
        "reportingController": "my-scheduler",
        "reportingInstance": "my-scheduler-host",
        "regarding": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": uid},
        "note": note,
    }


async def record(recorder: EventRecorder, body: dict[str, Any]) -> None:
    write = recorder.record(body)
    if write is not None:
        await write


async def test_the_first_is_created_the_second_starts_a_series_later_ones_only_count() -> None:
    server, clock = FakeServer(), Clock()
    recorder = EventRecorder(server, clock)
    await record(recorder, event("first"))
    clock.t += 5
    await record(recorder, event("second, other note"))  # the note does not make it another event
    clock.t += 5
    for _ in range(3):
        await record(recorder, event("third"))
    assert [(m, p.rsplit("/", 1)[-1]) for m, p, _ in server.calls] == [("POST", "events"), ("PATCH", "p.u1.fir")]
    assert server.calls[1][2]["series"]["count"] == 2
    await recorder.refresh()
    assert server.calls[-1][0] == "PATCH" and server.calls[-1][2]["series"]["count"] == 5


async def test_other_pods_or_reasons_are_other_events() -> None:
    server = FakeServer()
    recorder = EventRecorder(server, Clock())
    for body in (event(uid="u1"), event(uid="u2"), event(uid="u1", reason="Scheduled")):
        await record(recorder, body)
    assert [m for m, _, _ in server.calls] == ["POST", "POST", "POST"] and len(recorder) == 3


async def test_a_series_ends_after_six_quiet_minutes_with_its_last_count() -> None:
    server, clock = FakeServer(), Clock()
    recorder = EventRecorder(server, clock)
    for _ in range(4):
        await record(recorder, event())
    await record(recorder, event(uid="single"))
    clock.t += FINISH_TIME - 1
    await recorder.finish()
    assert len(recorder) == 2 and len(server.calls) == 3  # POST, PATCH (2), POST (single)
    clock.t += 2
    await recorder.finish()
    assert len(recorder) == 0
    assert server.calls[-1][0] == "PATCH" and server.calls[-1][2]["series"]["count"] == 4
    await record(recorder, event())  # a new start
    assert server.calls[-1][0] == "POST"


async def test_a_series_whose_event_is_gone_is_created_anew_with_its_count() -> None:
    server = FakeServer()
    recorder = EventRecorder(server, Clock())
    await record(recorder, event())
    server.missing = True
    await record(recorder, event())
    assert [m for m, _, _ in server.calls] == ["POST", "PATCH", "POST"]
    assert server.calls[-1][2]["series"]["count"] == 2 and server.calls[-1][2]["reason"] == "FailedScheduling"


class FlakyServer(FakeServer):
    """Fails the first ``failures`` calls with ``error``; records what reached it."""

    def __init__(self, failures: int, error: Exception) -> None:
        super().__init__()
        self.failures = failures
        self.error = error
        self.tries = 0

    async def __call__(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        self.tries += 1
        if self.tries <= self.failures:
            raise self.error
        return await super().__call__(method, path, body, content_type)


async def test_a_write_that_fails_on_the_network_is_retried_until_it_succeeds() -> None:
    server = FlakyServer(3, TransportError("connection refused"))
    recorder = EventRecorder(server, Clock(), retry_sleep=0.01)
    await record(recorder, event("during an outage"))
    assert [m for m, _, _ in server.calls] == ["POST"] and server.tries == 4
    assert recorder.retried == 3 and recorder.dropped == 0 and recorder.pending == 0


async def test_retries_stop_after_twelve_tries_as_client_go() -> None:
    server = FlakyServer(100, TransportError("connection refused"))
    recorder = EventRecorder(server, Clock(), retry_sleep=0.001)
    await record(recorder, event())
    assert server.tries == 12 and server.calls == [] and recorder.dropped == 1


async def test_an_answer_of_the_server_is_not_retried() -> None:
    server = FlakyServer(1, APIError(422, "invalid"))
    recorder = EventRecorder(server, Clock(), retry_sleep=0.001)
    await record(recorder, event())
    assert server.tries == 1 and recorder.retried == 0


async def test_a_create_whose_answer_was_lost_and_then_exists_counts_as_written() -> None:
    class LostThenExists(FakeServer):
        tries = 0

        async def __call__(self, method: str, path: str, body: Any, content_type: str) -> bytes:
            self.tries += 1
            if self.tries == 1:
                raise AnswerLost("POST: no answer within 15s")
            raise APIError(409, "already exists", "AlreadyExists")

    server = LostThenExists()
    recorder = EventRecorder(server, Clock(), retry_sleep=0.001)
    await record(recorder, event())
    assert server.tries == 2 and recorder.dropped == 0


async def test_a_fenced_write_is_not_retried() -> None:
    server = FlakyServer(100, Fenced("not sent (fenced)"))
    recorder = EventRecorder(server, Clock(), retry_sleep=0.001)
    await record(recorder, event())
    assert server.tries == 1


async def test_at_most_max_pending_writes_wait_then_events_are_dropped() -> None:
    gate = asyncio.Event()

    async def slow(method: str, path: str, body: Any, content_type: str) -> bytes:
        await gate.wait()
        return b"{}"

    recorder = EventRecorder(slow, Clock(), max_pending=2)
    writes = [recorder.record(event(uid=f"u{i}")) for i in range(2)]
    tasks = [asyncio.ensure_future(w) for w in writes if w is not None]
    await asyncio.sleep(0)
    assert recorder.pending == 2
    assert recorder.record(event(uid="u9")) is None and recorder.dropped == 1
    gate.set()
    await asyncio.gather(*tasks)
    assert recorder.pending == 0
