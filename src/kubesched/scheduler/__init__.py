"""kubesched.scheduler."""
