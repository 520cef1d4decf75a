"""`kubesched manifests`: everything a cluster needs to run kubesched, rendered as Kubernetes objects.

`plan.py` (what to deploy, checked), `k8s.py` (object builders, pod hardening), one module per component
(`extender.py` with its second kube-scheduler, `scheduler.py`, `webhook.py`) and `render.py` (apply order, YAML,
one file per object, the kustomize base). See docs/deploy.md.
"""
