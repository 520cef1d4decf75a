"""Guarded and timed plugin calls: what a plugin's error becomes, and how a call is timed.

`FrameworkError` is the Error status an attempt fails with; `plugin_error` turns a plugin's exception
into one with kube-scheduler's message for its extension point (`ERROR_MESSAGES`) and logs the traceback;
`PASS_THROUGH` are the exceptions no plugin call wraps; `timed` and `code_of` give a sampled call's
duration and status code to `CycleState.timer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import perf_counter
from typing import TypeVar

from kubesched.core.podinfo import PodInfo
from kubesched.core.quantity import QuantityError
from kubesched.errors import PluginError
from kubesched.framework.interfaces import PreFilterResult
from kubesched.framework.status import Code, Status, Verdicts

T = TypeVar("T")
Timer = Callable[[str, str, Code, float], None]  # CycleState.timer: (plugin, extension point, code, seconds)
log = logging.getLogger("kubesched.framework")


# What an attempt fails with when a plugin raises: kube-scheduler v1.35.4's messages for a plugin's error
# (framework/runtime/framework.go), the exception in place of the Go error.
ERROR_MESSAGES = {
    "PreEnqueue": 'running PreEnqueue plugin "{plugin}": {err}',
    "QueueSort": 'running QueueSort plugin "{plugin}": {err}',
    "QueueingHint": 'running QueueingHint of plugin "{plugin}": {err}',
    "Sign": 'running SignPod of plugin "{plugin}": {err}',
    "PreFilter": 'running PreFilter plugin "{plugin}": {err}',
    "PreFilterExtensionAddPod": 'running AddPod on PreFilter plugin "{plugin}": {err}',
    "PreFilterExtensionRemovePod": 'running RemovePod on PreFilter plugin "{plugin}": {err}',
    "Filter": 'running "{plugin}" filter plugin: {err}',
    "PostFilter": 'running PostFilter plugin "{plugin}": {err}',
    "PreScore": 'running PreScore plugin "{plugin}": {err}',
    "Score": 'running Score plugins: plugin "{plugin}" failed with: {err}',
    "NormalizeScore": 'running Normalize on Score plugins: plugin "{plugin}" failed with: {err}',
    "Reserve": 'running Reserve plugin "{plugin}": {err}',
    "Unreserve": 'running Unreserve plugin "{plugin}": {err}',
    "Permit": 'running Permit plugin "{plugin}": {err}',
    "PreBindPreFlight": 'running PreBindPreFlight "{plugin}": {err}',
    "PreBind": 'running PreBind plugin "{plugin}": {err}',
    "Bind": 'running Bind plugin "{plugin}": {err}',
    "PostBind": 'running PostBind plugin "{plugin}": {err}',
}


# Points whose calls are timed under another name than the error's (upstream's metric label).
_TIMED_AS = {"ScoreExtensionNormalize": "NormalizeScore"}


class FrameworkError(PluginError, RuntimeError):
    """A plugin failed with an Error status (not a rejection): the attempt fails.

    ``point`` is the extension point; ``raised`` the exception when the plugin raised one (its traceback
    has been logged by `plugin_error`).
    """

    def __init__(
        self, status: Status, *, point: str = "", raised: BaseException | None = None, message: str = ""
    ) -> None:
        if not message and point in ERROR_MESSAGES and status.plugin:
            # kube-scheduler's wrapping of a plugin's Error status at that point ("running "X" filter plugin: …").
            message = ERROR_MESSAGES[point].format(plugin=status.plugin, err=status.message)
        super().__init__(message or f"plugin {status.plugin!r} failed: {status.message}")
        self.status = status
        self.point = point
        self.raised = raised


# Not a plugin's bug: errors of the framework itself, and bad input (an extender's caller answers 400).
PASS_THROUGH = (FrameworkError, QuantityError)


def plugin_error(point: str, plugin: object, pod: PodInfo | None, err: BaseException) -> FrameworkError:
    """The error status of a plugin that raised ``err`` at ``point``; logs the traceback."""
    name = getattr(plugin, "name", "") or type(plugin).__name__
    point = _TIMED_AS.get(point, point)
    message = ERROR_MESSAGES[point].format(plugin=name, err=f"{type(err).__name__}: {err}")
    log.error("%s (pod %s)", message, pod.key if pod is not None else "-", exc_info=err)
    return FrameworkError(Status.error(message).with_plugin(name), point=point, raised=err, message=message)


def timed(
    timer: Callable[[str, str, Code, float], None], plugin: str, point: str, call: Callable[..., T], *args: object
) -> T:
    """``call(*args)``, its duration given to ``timer`` with the call's status code (sampled cycles only).

    A batch call covers every candidate node at once: its code is the first status it returned (Success
    when every node passed); a raise is recorded as Error and passed on.
    """
    began = perf_counter()
    try:
        result = call(*args)
    except BaseException:
        timer(plugin, point, Code.ERROR, perf_counter() - began)
        raise
    code = Code.UNSCHEDULABLE if result is None and point == "Sign" else code_of(result)  # could not sign
    timer(plugin, point, code, perf_counter() - began)
    return result


def code_of(result: object) -> Code:
    """The status code a plugin's answer stands for (Status, PreFilterResult, Verdicts; else Success)."""
    if isinstance(result, Status):
        return result.code
    if isinstance(result, PreFilterResult):
        return result.status.code
    if isinstance(result, Verdicts) and not result.all_passed and result.statuses:
        return result.statuses[0].code
    if isinstance(result, tuple) and result:  # Permit's (status, timeout), PostFilter's (node, status)
        return next((part.code for part in result if isinstance(part, Status)), Code.SUCCESS)
    return Code.SUCCESS
