"""The one YAML reader of configuration files: kube-scheduler's strictness (duplicate keys are errors) and limits.

A document is bounded before anything walks it: its text size, its nesting depth and its size once YAML
aliases are expanded (an alias is shared, not copied, so a "billion laughs" file is small in memory yet
exponential to walk), and a recursive alias is refused. Each problem is a `FieldError`, never a traceback.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from kubesched.errors import FieldError, InputError, child, index

DOCUMENT = "<document>"
MAX_BYTES = 4 * 1024 * 1024  # a real configuration is a few KiB
MAX_DEPTH = 100  # kube-scheduler's deepest field (a node selector's values) is 12 levels down
MAX_VALUES = 200_000  # values after alias expansion


class _Duplicated(dict[Any, Any]):
    """A mapping read from YAML, remembering the keys it saw twice (with their lines)."""

    duplicates: list[tuple[str, int]]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate keys and bounds nesting depth while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise yaml.YAMLError(f"nested more than {MAX_DEPTH} levels deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        out = _Duplicated()
        out.duplicates = []
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
                )
            if key in out:
                out.duplicates.append((str(key), key_node.start_mark.line + 1))
            out[key] = self.construct_object(value_node, deep=deep)
        return out


def _mapping(loader: _StrictLoader, node: yaml.Node) -> dict[Hashable, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise yaml.constructor.ConstructorError(None, None, "expected a mapping", node.start_mark)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _mapping)


def load(text: str) -> tuple[object, list[FieldError]]:
    """The document in ``text`` (YAML or JSON) and its problems; a document that cannot be read is None."""
    if len(text) > MAX_BYTES:
        return None, [FieldError(DOCUMENT, f"is {len(text)} bytes; a configuration is limited to {MAX_BYTES}")]
    try:
        doc = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as err:
        return None, [FieldError(DOCUMENT, f"not valid YAML or JSON: {_problem(err)}")]
    except RecursionError:
        return None, [FieldError(DOCUMENT, f"nested more than {MAX_DEPTH} levels deep")]
    problem = _size_problem(doc)
    if problem:
        return None, [FieldError(DOCUMENT, problem)]
    return _plain(doc, {}), _duplicates(doc, "")


def _plain(value: object, seen: dict[int, object]) -> object:
    """``value`` with plain dicts (writers and msgspec want them), shared parts kept shared."""
    if not isinstance(value, (dict, list)):
        return value
    if id(value) not in seen:
        if isinstance(value, dict):
            seen[id(value)] = {k: _plain(v, seen) for k, v in value.items()}
        else:
            seen[id(value)] = [_plain(v, seen) for v in value]
    return seen[id(value)]


def _problem(err: yaml.YAMLError) -> str:
    # One line instead of PyYAML's multi-line report with a caret.
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        return f"{err.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(err).replace("\n", " ")


def _size_problem(doc: object, max_values: int = MAX_VALUES) -> str | None:
    """Why ``doc`` is too big to walk, counting every value as often as aliases repeat it; None if it is not."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(value: object) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise ValueError("contains a recursive YAML alias (a value that contains itself)")
        open_.add(key)
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        total = 1
        for k, v in items:
            total += size(k) + size(v)
            if total > max_values:
                break
        open_.discard(key)
        sizes[key] = total
        return total

    try:
        total = size(doc)
    except ValueError as err:
        return str(err)
    if total > max_values:
        return f"has more than {max_values} values once YAML aliases are expanded"
    return None


class DocumentError(InputError):
    """A stream of documents that cannot be read within the limits; the message says which and why."""


# libyaml's parser where PyYAML has it: cluster files reach hundreds of MB. It bounds nesting itself
# (1,000 levels, a ScannerError), and aliases are counted by `_size_problem` as for configurations.
_FastLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_documents(text: str, *, max_values: int) -> list[object]:
    """Every document of a YAML stream, each at most ``max_values`` values once aliases are expanded.

    For large data files (cluster files): no duplicate-key check; the caller bounds the text's size.
    """
    try:
        docs = [d for d in yaml.load_all(text, Loader=_FastLoader) if d is not None]
        problems = [(i, _size_problem(doc, max_values)) for i, doc in enumerate(docs)]
    except yaml.YAMLError as err:
        raise DocumentError(f"not valid YAML or JSON: {_problem(err)}") from None
    except RecursionError:
        raise DocumentError("nested too deeply") from None
    for i, problem in problems:
        if problem:
            raise DocumentError(f"document {i} {problem}")
    return docs


def _duplicates(doc: object, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if isinstance(doc, _Duplicated):
        for key, line in doc.duplicates:
            out.append(FieldError(child(path, key), f'duplicate field "{key}" (line {line}: key already set in map)'))
        for key, value in doc.items():
            out += _duplicates(value, child(path, str(key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _duplicates(value, index(path, i))
    return out
