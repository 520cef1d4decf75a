"""Every error kubesched raises: one tree under `KubeschedError` (drawn in docs/architecture.md, "Errors").

The bottom layer: imports nothing of kubesched, so every module can raise from it. Branches say what
kind of thing went wrong; the classes in the modules say where. Branches that callers used to catch as
`ValueError`, `OSError` or `RuntimeError` still are those too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The words a plugin uses for a setting kube-scheduler accepts and kubesched cannot honour (config.check tells such a
# configuration "valid for kube-scheduler, not runnable by kubesched" by them).
NOT_IMPLEMENTED = "kubesched does not implement"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem (or warning) at one field path, such as `extenders[0].weight`.

    `upstream` is True when kube-scheduler itself enforces the rule, False for kubesched's own stricter checks
    (kube-scheduler would accept the file, but it would not do what the author almost certainly meant).
    """

    path: str
    message: str
    upstream: bool = True

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def child(path: str, key: str) -> str:
    """`child("extenders[0]", "weight")` -> `extenders[0].weight`; a top-level key has no leading dot."""
    return f"{path}.{key}" if path else key


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


class KubeschedError(Exception):
    """The root: anything kubesched raises on purpose."""


class ConfigurationError(KubeschedError, ValueError):
    """A file, flag or profile that cannot be used; `errors` lists every problem with its field path.

    Without ``errors`` (a problem the message says all about), `errors` is empty.
    """

    def __init__(self, message: str = "", errors: Sequence[FieldError] = ()) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__(message or "\n".join(str(e) for e in self.errors))


class InputError(KubeschedError, ValueError):
    """A request, object or value that cannot be read (an HTTP 400, an admission review, a quantity)."""


class PluginError(KubeschedError):
    """User code (a plugin, a policy, a rule) cannot be loaded, or failed while running."""


class ClusterError(KubeschedError):
    """The cluster refused or could not do what was asked (an API answer, a lost lease, a credential)."""


class TransportError(KubeschedError, OSError):
    """The other side (the API server) could not be reached or did not answer; nothing is known to have been
    applied (but see `AnswerLost`)."""


class CLIError(KubeschedError):
    """A user error of a command: printed as `kubesched: error: <message>`, exit code 2, never a traceback."""


class HarnessError(KubeschedError, RuntimeError):
    """The test control plane (`kubesched.testing`) could not be built, started or asked."""
