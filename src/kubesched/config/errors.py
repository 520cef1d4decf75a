"""Problems found in a scheduler configuration, each tied to a field path such as `extenders[0].weight`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem (or warning) at one field path.

    `upstream` is True when kube-scheduler itself enforces the rule, False for kubesched's own stricter checks
    (kube-scheduler would accept the file, but it would not do what the author almost certainly meant).
    """

    path: str
    message: str
    upstream: bool = True

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigParseError(ValueError):
    """A document could not be read into the model; `errors` lists every problem found."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


def child(path: str, key: str) -> str:
    """`child("extenders[0]", "weight")` -> `extenders[0].weight`; a top-level key has no leading dot."""
    return f"{path}.{key}" if path else key


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"
