"""A pod's signature (kube-scheduler's SignPod): the scheduler name and every signer's fragments.

`Framework.sign` keeps the static signers' part with the pod's spec and asks the dynamic ones each time;
a plugin that raises is carried out as `PluginRaised` and reported by the framework with the pod.
"""

from __future__ import annotations

from collections.abc import Hashable
from time import perf_counter

from kubesched.core.podinfo import PodInfo
from kubesched.framework.guard import PASS_THROUGH, PluginRaised, Timer
from kubesched.framework.interfaces import SignPlugin
from kubesched.framework.status import Code


def signature(pod: PodInfo, signers: list[SignPlugin], timer: Timer | None = None) -> Hashable | None:
    """The scheduler name and every signer's fragments, or None as soon as one cannot sign the pod."""
    fragments: list[object] = [pod.pod.spec.scheduler_name]
    plugin: SignPlugin | None = None
    try:
        for plugin in signers:
            if timer is None:
                part = plugin.sign(pod)
            else:
                began = perf_counter()
                part = plugin.sign(pod)
                timer(
                    plugin.name,
                    "Sign",
                    Code.SUCCESS if part is not None else Code.UNSCHEDULABLE,
                    perf_counter() - began,
                )
            if part is None:
                return None
            fragments.append(part)
    except PASS_THROUGH:
        raise
    except Exception as err:
        raise PluginRaised(plugin, err) from err
    return tuple(fragments)
