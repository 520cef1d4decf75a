"""Each pod's last decision: kept bounded, recorded from what the scheduler reports, served at /debug/decisions."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from kubesched.cli import explain_recorded
from kubesched.core.podinfo import PodInfo
from kubesched.http.server import HTTPServer, Limits
from kubesched.scheduler.decisions import DecisionRecords, RecordingWriter
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.metrics import SchedulerMetrics
from kubesched.scheduler.server import SchedulerRoutes
from kubesched.testing.builders import make_pod


def info(name: str, uid: str = "") -> PodInfo:
    return make_pod(name, namespace="ns", uid=uid or f"uid-{name}")


def test_records_are_bounded_least_recent_out_and_count_attempts() -> None:
    now = iter(range(100))
    records = DecisionRecords(2, now=lambda: float(next(now)))
    records.note(info("a"), "s", "Unschedulable", None, "0/1 nodes are available: 1 Insufficient cpu.", None)
    records.note(info("a"), "s", "Unschedulable", None, "again", "n1")
    records.note(info("b"), "s", "Scheduled", "n1", "", None)
    got = records.get("ns/a")
    assert got is not None and got.attempts == 2 and got.message == "again" and got.nominated_node == "n1"
    records.note(info("c"), "s", "Scheduled", "n2", "", None)  # a is the least recently decided
    assert records.get("ns/a") is None and len(records) == 2
    assert [d.pod for d in records.recent(10)] == ["ns/c", "ns/b"]
    records.note(info("b", uid="other"), "s", "Scheduled", "n3", "", None)  # a new pod of that name
    assert records.get("ns/b").attempts == 1  # type: ignore[union-attr]
    off = DecisionRecords(0)
    off.note(info("a"), "s", "Scheduled", "n", "", None)
    assert len(off) == 0


async def test_the_recording_writer_notes_what_the_scheduler_reports_and_passes_it_on() -> None:
    cluster = MemoryCluster([], [])
    records = DecisionRecords(10)
    writer = RecordingWriter(cluster, records)
    assert writer.binds_inline is cluster.binds_inline
    writer.failed(info("p"), "default-scheduler", "Unschedulable", "0/0 nodes are available.", "")
    writer.scheduled(info("q"), "n1", "default-scheduler")
    assert cluster.conditions["ns/p"] == ("Unschedulable", "0/0 nodes are available.")  # passed on
    assert records.get("ns/p").nominated_node is None  # type: ignore[union-attr]  # '' clears: no nomination
    assert records.get("ns/q").node == "n1"  # type: ignore[union-attr]
    assert [e.reason for e in cluster.events] == ["FailedScheduling", "Scheduled"]


async def test_the_route_serves_records_and_refuses_what_is_not_a_pod_key() -> None:
    records = DecisionRecords(3)
    records.note(info("p"), "s", "Unschedulable", None, "0/1 nodes are available.", None)
    server = HTTPServer(
        SchedulerRoutes(SchedulerMetrics(), lambda: True, records), "127.0.0.1", 0, limits=Limits(max_header_bytes=8192)
    )
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.bound_port}") as http:
            one = await http.get("/debug/decisions/ns/p")
            assert one.status_code == 200 and one.json()["message"] == "0/1 nodes are available."
            listed = (await http.get("/debug/decisions")).json()
            assert listed["kind"] == "DecisionList" and listed["size"] == 3 and listed["items"][0]["pod"] == "ns/p"
            missing = await http.get("/debug/decisions/ns/q")
            assert missing.status_code == 404 and "no decision recorded for ns/q" in missing.text
            for bad in (
                "/debug/decisions/ns",
                "/debug/decisions/a/b/c",
                "/debug/decisions/NS/p",
                "/debug/decisions/" + "x" * 3000,
            ):
                answer = await http.get(bad)
                assert answer.status_code in (400, 414, 431), bad
                assert "Traceback" not in answer.text
            assert (await http.get("/healthz")).text == "ok"  # still serving
    finally:
        await server.shutdown(grace=1.0)
    off = SchedulerRoutes(SchedulerMetrics(), lambda: True, DecisionRecords(0))
    assert off.dispatch("GET", "/debug/decisions/ns/p", b"")[0] == 404


@contextmanager
def answering(status: int, body: bytes, delay: float = 0.0) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if delay:
                threading.Event().wait(delay)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_explain_reads_a_record_and_names_every_way_the_answer_is_not_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(explain_recorded, "TIMEOUT", 0.5)
    record = {"pod": "ns/p", "uid": "u", "schedulerName": "s", "result": "Scheduled", "node": "n1", "message": "",
              "nominatedNode": None, "time": 0.0, "attempts": 3}  # fmt: skip
    with answering(200, json.dumps(record).encode()) as url:
        got, why, name = explain_recorded.fetch(url, "ns/p")
        assert got is not None and got.node == "n1" and got.attempts == 3 and got.time == "1970-01-01T00:00:00Z"
        assert name == "s" and why == ""
    with answering(404, b"no decision recorded for ns/p") as url:
        assert explain_recorded.fetch(url, "ns/p")[1].endswith("has no record: no decision recorded for ns/p")
    with answering(500, b"boom") as url:
        assert "answered 500: boom" in explain_recorded.fetch(url, "ns/p")[1]
    with answering(200, b'{"pod": [' * 10) as url:
        assert "not a decision record" in explain_recorded.fetch(url, "ns/p")[1]
    with answering(200, b"x" * (explain_recorded.MAX_ANSWER + 10)) as url:
        assert "more than" in explain_recorded.fetch(url, "ns/p")[1]
    with answering(200, b"{}", delay=explain_recorded.TIMEOUT + 1) as url:
        assert "could not be asked" in explain_recorded.fetch(url, "ns/p")[1]
    assert "could not be asked" in explain_recorded.fetch("http://127.0.0.1:1", "ns/p")[1]
