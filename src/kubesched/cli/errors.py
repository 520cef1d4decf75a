"""The error a subcommand raises to end with a message and exit code 2, never a traceback."""


class CLIError(Exception):
    """A user error: printed as `kubesched: error: <message>`."""
