"""The engine talks to extenders through its own protocol; the shell hands it the client's factory."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import parse
from kubesched.config.v1 import Extender
from kubesched.plugins import in_tree
from kubesched.scheduler.engine.extenders import Extenders, NoExtenders
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.profiles.manager import build
from kubesched.scheduler.remote.extenders import ExtenderSet

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "extenders": [{"urlPrefix": "http://ext/", "filterVerb": "filter"}],
}


def scheduler(**kw: object) -> Scheduler:
    config = parse(CONFIG)
    return Scheduler(
        ClusterCache(),
        MemoryCluster([], []),
        lambda make_handle: build(config, in_tree(), make_handle),
        clock=ManualClock(),
        **kw,  # type: ignore[arg-type]
    )


def test_a_scheduler_without_an_extender_client_refuses_a_configuration_that_names_extenders() -> None:
    with pytest.raises(ValueError, match="names extenders"):
        scheduler()


async def test_the_shell_s_factory_makes_the_extenders_from_the_configuration() -> None:
    made: list[Sequence[Extender]] = []

    def factory(configs: Sequence[Extender]) -> Extenders:
        made.append(configs)
        return NoExtenders()

    assert isinstance(scheduler(extenders=factory).extenders, NoExtenders)
    assert [e.url_prefix for e in made[0]] == ["http://ext/"]
    real = scheduler(extenders=ExtenderSet).extenders
    assert isinstance(real, ExtenderSet) and len(real) == 1
    await real.aclose()
