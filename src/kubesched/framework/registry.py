"""Plugins by name. A registry is an ordinary object: built by whoever needs one, never global."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kubesched.errors import PluginError
from kubesched.framework.interfaces import Plugin


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the known name closest to a misspelt one (case first), else ``""``."""
    known = list(known)
    by_folded = {k.lower(): k for k in known}
    close = [by_folded[name.lower()]] if name.lower() in by_folded else difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class RegistryError(PluginError, ValueError):
    """A plugin name registered twice, or a class that is not a plugin."""


@dataclass(frozen=True)
class Entry:
    plugin: type[Plugin]
    source: str


class Registry:
    """Maps plugin names to plugin classes, remembering where each came from."""

    def __init__(self, plugins: Iterable[type[Plugin]] = (), source: str = "built-in") -> None:
        self._entries: dict[str, Entry] = {}
        for plugin in plugins:
            self.register(plugin, source)

    def register(self, plugin: type[Plugin], source: str = "built-in") -> None:
        if not (isinstance(plugin, type) and issubclass(plugin, Plugin)) or not plugin.name:
            raise RegistryError(f"{plugin!r} from {source} is not a kubesched plugin class with a name")
        existing = self._entries.get(plugin.name)
        if existing is not None:
            raise RegistryError(f"plugin {plugin.name!r} from {source} is already registered (from {existing.source})")
        self._entries[plugin.name] = Entry(plugin, source)

    def get(self, name: str) -> type[Plugin] | None:
        entry = self._entries.get(name)
        return entry.plugin if entry else None

    def unknown(self, name: str) -> str:
        """The message for a name this registry does not hold, with the closest one it does."""
        return f"unknown plugin {name!r}{did_you_mean(name, self._entries)}"

    def source(self, name: str) -> str:
        return self._entries[name].source

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def merged(self, other: Registry) -> Registry:
        out = Registry()
        for reg in (self, other):
            for name, entry in reg._entries.items():
                out.register(entry.plugin, entry.source)
                del name
        return out
