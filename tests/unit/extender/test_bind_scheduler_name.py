"""bind takes only pods of the scheduler the extender serves (`extender serve --scheduler-name`)."""

from __future__ import annotations

import json
from typing import Any

from kubesched.cluster.ledger import Ledger
from kubesched.extender.service import ExtenderService

from .conftest import make_service, pod
from .test_reservations import SMALL, FakeAPI, bind, filter_, used


def _service(scheduler_name: str | None) -> tuple[ExtenderService, FakeAPI]:
    svc = make_service()
    api = FakeAPI()
    svc.cache.tracks_pods = True
    ledger = Ledger(svc.cache)
    service = ExtenderService(svc.policy, svc.framework, svc.cache, api, ledger, scheduler_name=scheduler_name)  # type: ignore[arg-type]
    return service, api


def _of(scheduler: str | None, uid: str = "u1", name: str = "p1") -> dict[str, Any]:
    p = pod(1, uid=uid, name=name)
    if scheduler is not None:
        p["spec"]["schedulerName"] = scheduler
    return p


async def test_a_pod_of_another_scheduler_is_not_bound_and_the_answer_says_why() -> None:
    svc, api = _service("ext-scheduler")
    theirs = _of("default-scheduler")
    filter_(svc, theirs)
    error = await bind(svc, theirs)
    assert error == (
        "binding pod default/p1 refused: its spec.schedulerName is 'default-scheduler', and this extender binds only "
        "pods of 'ext-scheduler' (extender serve --scheduler-name)"
    )
    assert api.bindings == [] and used(svc) == 0 and svc.ledger.held == 0
    ours = _of("ext-scheduler", uid="u2", name="p2")
    filter_(svc, ours)
    assert await bind(svc, ours) == ""
    assert api.bindings == [("p2", SMALL)]


async def test_a_pod_read_from_the_api_server_is_checked_too() -> None:
    svc, api = _service("ext-scheduler")
    api.pods["p3"] = _of(None, uid="u3", name="p3")  # no schedulerName: the API server's default-scheduler
    error = await bind(svc, api.pods["p3"])
    assert "its spec.schedulerName is 'default-scheduler'" in error and api.bindings == []


async def test_by_default_the_policy_profile_s_scheduler_name_is_served() -> None:
    svc, api = _service(None)
    assert svc.scheduler_name == svc.policy.profile.scheduler_name == "default-scheduler"
    plain = _of(None)
    filter_(svc, plain)
    assert await bind(svc, plain) == ""
    other = _of("kubesched", uid="u4", name="p4")
    filter_(svc, other)
    assert "binds only pods of 'default-scheduler'" in await bind(svc, other)
    assert json.dumps(api.bindings) == json.dumps([["p1", SMALL]])
