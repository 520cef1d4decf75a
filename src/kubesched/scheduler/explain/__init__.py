"""`kubesched explain`: one pod's scheduling cycle on a cluster, every node and every plugin, and what would help.

`model.py` is the versioned JSON schema, `evaluate.py` runs the pod through a fresh in-memory scheduler
(the real cycle decides the node, the FitError message and preemption; every plugin is also asked about
every node), `helps.py` re-runs the filters with one constraint of the pod relaxed, `render.py` writes text.
"""
