"""The error of a configuration document that cannot be read into the model."""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.errors import ConfigurationError, FieldError


class ConfigParseError(ConfigurationError):
    """A document could not be read into the model; `errors` lists every problem found."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("", errors)
