"""kubesched.webhook."""
