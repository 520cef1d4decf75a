"""kubesched.deploy."""
