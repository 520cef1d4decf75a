"""The webhook's two paths over the configured rules: bytes in, AdmissionReview bytes out, no HTTP."""

from __future__ import annotations

import copy
import inspect
import logging

from kubesched.errors import PluginError
from kubesched.webhook.jsonpatch import diff
from kubesched.webhook.metrics import WebhookMetrics
from kubesched.webhook.review import AdmissionRequest, decode, is_pod, pod_object, reply
from kubesched.webhook.rules import Phase, PodJSON, PythonRule, Rule, Verdict, pod_fields
from kubesched.webhook.rules_file import WebhookConfig

log = logging.getLogger("kubesched.webhook")


class RuleFailed(PluginError, RuntimeError):
    """A rule raised or answered nonsense: the request cannot be judged (HTTP 500, failurePolicy applies)."""


class AdmissionService:
    """Runs the rules of one phase over a pod request and builds the AdmissionReview reply."""

    def __init__(self, config: WebhookConfig, metrics: WebhookMetrics | None = None) -> None:
        self.config = config
        self.metrics = metrics or WebhookMetrics()

    async def review(self, phase: Phase, body: bytes) -> bytes:
        """Raises BadReview for a malformed request, RuleFailed when a rule fails."""
        request = decode(body)
        if not is_pod(request) or request.operation not in self.config.operations:
            return reply(request.uid)
        original, _ = pod_object(request)
        work = copy.deepcopy(original)  # mutating rules edit this; the patch is the difference
        denials: list[str] = []
        warnings: list[str] = []
        for rule in self.config.rules:
            if rule.phase != phase:
                continue
            before = copy.deepcopy(work) if phase == "mutate" else work
            # A validating user rule gets its own copy, so it cannot change what later rules see.
            subject = copy.deepcopy(work) if phase == "validate" and isinstance(rule, PythonRule) else work
            verdict = await self._run(rule, subject, request)
            if phase == "mutate" and work != before:
                self.metrics.verdicts.labels(rule.name, "mutated").inc()
            if not verdict.allowed:
                denials.append(f"{verdict.message or 'denied'} (rule {rule.name})")
                self.metrics.verdicts.labels(rule.name, "denied").inc()
            if verdict.warnings:
                warnings += [f"{w} (rule {rule.name})" for w in verdict.warnings]
                self.metrics.verdicts.labels(rule.name, "warned").inc()
        if denials:
            log.info(
                "Denied pod", extra={**pod_fields(request, original), "phase": phase, "reason": "; ".join(denials)}
            )
        patch = diff(original, work) if phase == "mutate" and not denials else []
        return reply(request.uid, allowed=not denials, message="; ".join(denials), warnings=warnings, patch=patch)

    @staticmethod
    async def _run(rule: Rule, pod: PodJSON, request: AdmissionRequest) -> Verdict:
        try:
            result = rule(pod, request)
            if inspect.isawaitable(result):
                result = await result
        except Exception as err:
            log.exception("Rule failed", extra={**pod_fields(request, pod), "rule": rule.name})
            raise RuleFailed(f"rule {rule.name} failed: {type(err).__name__}: {err}") from err
        if result is None:
            return Verdict()
        if not isinstance(result, Verdict):
            raise RuleFailed(f"rule {rule.name} returned {type(result).__name__}; expected a Verdict or None")
        return result


def _pod_name(pod: PodJSON) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("name") or f"{meta.get('generateName', '')}*")
