"""The scheduling queue with a manual clock: order, backoff, the unschedulable pool, gates."""

from __future__ import annotations

import pytest

from kubesched.framework.status import SUCCESS, Status
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.queue import ManualClock, QueuedPod, SchedulingQueue
from kubesched.testing.builders import make_pod


def names(queue: SchedulingQueue) -> list[str]:
    out = []
    while (entry := queue.pop()) is not None:
        out.append(entry.info.name)
    return out


def test_active_pops_higher_priority_first_then_arrival() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock)
    for name, priority in (("low", 0), ("high", 100), ("low2", 0), ("mid", 50)):
        queue.add(make_pod(name, priority=priority), "default-scheduler")
        clock.advance(1)
    assert names(queue) == ["high", "mid", "low", "low2"]


@pytest.mark.parametrize(("attempts", "seconds"), [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (9, 10)])
def test_backoff_doubles_from_one_second_up_to_ten(attempts: int, seconds: float) -> None:
    assert SchedulingQueue().backoff_duration(attempts) == seconds


def test_an_error_backs_off_then_the_pod_comes_back_by_itself() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock)
    queue.add(make_pod("p"), "s")
    entry = queue.pop()
    assert entry is not None
    queue.requeue(entry, error=True)
    assert queue.pending()[q.BACKOFF] == 1
    assert queue.pop() is None
    clock.advance(0.99)
    assert queue.pop() is None
    clock.advance(0.02)
    again = queue.pop()
    assert again is entry and again.attempts == 2
    queue.requeue(again, error=True)
    clock.advance(1.5)
    assert queue.pop() is None  # second attempt: 2 s
    clock.advance(0.6)
    assert queue.pop() is entry


def test_without_retry_errors_an_errored_pod_waits_for_an_event_instead() -> None:
    # `scheduler run --cluster`: nothing changes in memory between two retries, so none is made without an event.
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock)
    queue.retry_errors = False
    queue.add(make_pod("p"), "s")
    entry = queue.pop()
    assert entry is not None
    queue.requeue(entry, error=True)
    assert queue.pending()[q.UNSCHEDULABLE] == 1 and queue.next_backoff_expiry() is None
    clock.advance(60)
    assert queue.pop() is None
    assert queue.on_event(q.NODE_ADD) == 1  # something changed: tried again (after its backoff)
    clock.advance(1)
    assert queue.pop() is entry
    # A PreEnqueue plugin's error too: asked again only after an event.
    failing = SchedulingQueue(clock=clock, pre_enqueue=lambda _e: Status.error("boom"))
    failing.retry_errors = False
    failing.add(make_pod("g"), "s")
    assert failing.pending()[q.UNSCHEDULABLE] == 1 and failing.next_backoff_expiry() is None


def test_unschedulable_pods_wait_for_an_event_their_plugins_care_about() -> None:
    clock = ManualClock()
    interested = {"fit": {q.NODE_ADD, q.POD_DELETE}, "name": {q.NODE_ADD}}
    queue = SchedulingQueue(
        clock=clock, interested=lambda e, ev, _n, _o: any(ev in interested[p] for p in e.unschedulable_plugins)
    )
    for name in ("fit", "name"):
        queue.add(make_pod(name), "s")
        entry = queue.pop()
        assert entry is not None
        queue.requeue(entry, plugins=frozenset({name}))
    assert queue.pending() == {q.ACTIVE: 0, q.BACKOFF: 0, q.UNSCHEDULABLE: 2, q.GATED: 0}
    clock.advance(30)
    assert queue.pop() is None  # nothing happened: they stay parked past their backoff
    assert queue.on_event(q.POD_DELETE) == 1
    assert names(queue) == ["fit"]
    assert queue.on_event(q.NODE_ADD) == 1
    assert names(queue) == ["name"]


def test_a_moved_pod_still_in_backoff_waits_it_out() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock)
    queue.add(make_pod("p"), "s")
    entry = queue.pop()
    assert entry is not None
    queue.requeue(entry)
    queue.on_event(q.NODE_ADD)
    assert queue.pending()[q.BACKOFF] == 1
    clock.advance(1)
    assert names(queue) == ["p"]


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock, interested=lambda _e, _ev, _n, _o: False)
    queue.add(make_pod("p"), "s")
    entry = queue.pop()
    assert entry is not None
    queue.requeue(entry, plugins=frozenset({"x"}))
    queue.on_event(q.NODE_ADD)
    clock.advance(299)
    assert queue.pop() is None
    clock.advance(1)
    assert names(queue) == ["p"]


def test_an_event_during_the_cycle_sends_the_rejected_pod_to_backoff_not_the_pool() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock)
    queue.add(make_pod("p"), "s")
    entry = queue.pop()
    assert entry is not None
    queue.on_event(q.NODE_ADD)  # arrives while the pod is being scheduled
    queue.requeue(entry, plugins=frozenset({"NodeResourcesFit"}))
    assert queue.pending()[q.BACKOFF] == 1


def test_gated_pods_wait_until_the_pod_changes() -> None:
    def gates(entry: QueuedPod) -> Status:
        spec_gates = entry.info.pod.spec.scheduling_gates
        return Status.unresolvable("waiting for scheduling gates: [g]") if spec_gates else SUCCESS

    queue = SchedulingQueue(clock=ManualClock(), pre_enqueue=gates)
    queue.add(make_pod("p", schedulingGates=[{"name": "g"}]), "s")
    assert queue.pending()[q.GATED] == 1
    queue.on_event(q.NODE_ADD)
    assert queue.pop() is None
    queue.update(make_pod("p"), "s")
    assert names(queue) == ["p"]


def test_a_pod_deleted_in_flight_is_not_requeued() -> None:
    queue = SchedulingQueue(clock=ManualClock())
    queue.add(make_pod("p"), "s")
    entry = queue.pop()
    assert entry is not None
    queue.delete("uid-p")
    queue.requeue(entry, error=True)
    assert len(queue) == 0 and sum(queue.pending().values()) == 0


def test_a_new_sort_order_rebuilds_the_active_heap() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock=clock)
    for name in ("a", "b", "c"):
        queue.add(make_pod(name), "s")
        clock.advance(1)
    queue.resort(lambda pod, _t: (-ord(pod.name),))
    assert names(queue) == ["c", "b", "a"]
