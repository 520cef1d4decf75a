"""A simulation as text: per step one line of numbers, the pods left pending grouped by reason, and with
--compare the aggregate differences and the pods that ended differently."""

from __future__ import annotations

from kubesched.scheduler.simulate.model import Aggregate, Run, Simulation

MAX_LISTED = 20  # pending reasons and differing pods listed in text; -o json has every one


def _numbers(a: Aggregate) -> str:
    spread = ", ".join(f"{s.resource} p50 {s.p50:.0%} p99 {s.p99:.0%}" for s in a.spread)
    frag = "".join(
        f"; {f.resource}: {f.partially_used} node(s) partly used, {f.stranded} stranded of {f.free} free"
        for f in a.fragmentation
    )
    return (
        f"placed {a.pods_placed}, pending {a.pods_pending}, preemptions {a.preemptions}, "
        f"nodes used {a.nodes_used}/{a.nodes}; {spread}{frag}"
    )


def _run(run: Run, lines: list[str]) -> None:
    add = lines.append
    add(f"Run {run.label}: {run.config or 'kube-scheduler defaults'} (profiles: {', '.join(run.profiles)})")
    if run.initial_aggregate is not None:
        add(f"  before:  {_numbers(run.initial_aggregate)}")
    for step in run.steps:
        add(f"  step {step.index} ({step.name}): {'; '.join(step.actions)}")
        add(f"    after: {_numbers(step.aggregate)} [{step.cycles} cycle(s)]")
        for p in step.preemptions[:MAX_LISTED]:
            add(f"    preempted: {p.victim} for {p.preemptor} on {p.node}")
        if len(step.preemptions) > MAX_LISTED:
            add(f"    … {len(step.preemptions) - MAX_LISTED} more preemption(s)")
    for note in run.notes:
        add(f"  note: {note}")
    pending: dict[str, list[str]] = {}
    for d in run.final:
        if d.node is None:
            pending.setdefault(d.message, []).append(d.pod)
    if pending:
        add("  pending at the end, by reason:")
        for message, pods in sorted(pending.items(), key=lambda kv: -len(kv[1]))[:MAX_LISTED]:
            names = ", ".join(pods[:5]) + (", …" if len(pods) > 5 else "")
            add(f"    {len(pods)} pod(s) ({names}): {message}")


def text(sim: Simulation) -> str:
    lines = [
        f"Simulation: {sim.scenario_name or sim.scenario} on {sim.cluster} "
        f"(Kubernetes {sim.kubernetes_version}, seed {sim.seed})"
    ]
    for run in sim.runs:
        _run(run, lines)
    c = sim.comparison
    if c is not None:
        lines.append("Comparison (B - A, after the last step):")
        width = max((len(d.metric) for d in c.aggregate), default=0)
        for d in c.aggregate:
            if d.a == d.b:
                continue
            lines.append(f"  {d.metric:<{width}}  A {_fmt(d.a)}  B {_fmt(d.b)}  ({_fmt(d.b - d.a, sign=True)})")
        lines.append(f"  {c.same} pod(s) ended the same, {len(c.pods)} differently")
        for p in c.pods[:MAX_LISTED]:
            lines.append(f"    {p.pod}: A {p.a or 'pending'}, B {p.b or 'pending'}")
        if len(c.pods) > MAX_LISTED:
            lines.append(f"    … {len(c.pods) - MAX_LISTED} more (-o json lists every one)")
    return "\n".join(lines) + "\n"


def _fmt(x: float, sign: bool = False) -> str:
    text = f"{x:+.4g}" if sign else f"{x:.4g}"
    return text
