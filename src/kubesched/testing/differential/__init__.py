"""The differential test: random clusters and pods through kube-scheduler and kubesched on the same objects.

`generate` makes a seeded `Scenario` (plain API manifests; what pending pods ask in `constraints`, the label
keys in `names`), `extender` is the pass-through extender that
records the nodes that passed kube-scheduler's filters, `runner` drives a `ControlPlane` one pod at a time
and compares with a decider given by the caller (kubesched's, `kubesched.scheduler.memory.decide_snapshot`),
`known` holds the Known differences (also listed in docs/scheduler.md), `report` the figures.
"""
