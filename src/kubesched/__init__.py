"""kubesched: Kubernetes scheduling in Python."""
