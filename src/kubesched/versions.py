"""The releases kubesched follows: the Kubernetes reference (semantics, messages, the kube-scheduler image
of generated manifests, the control plane the tests build) and the etcd built beside it."""

from __future__ import annotations

KUBERNETES_VERSION = "1.35.4"
ETCD_VERSION = "3.6.16"
