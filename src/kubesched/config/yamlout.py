"""YAML for Kubernetes readers: strings that Go's YAML would take for numbers are quoted.

PyYAML writes ``1e3`` or ``0e357655`` plain (YAML 1.1 floats need a dot), but go-yaml, which
kube-scheduler and kubectl read with, resolves them as numbers: a string field then fails to decode.
"""

from __future__ import annotations

import re
from typing import IO, Any

import yaml

# go-yaml's float and integer forms (resolve.go) that PyYAML does not quote on its own.
_GO_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?0[bo][0-7_]+|[-+]?[0-9][0-9_]*")


class KubeDumper(yaml.SafeDumper):
    """A SafeDumper whose number-like strings are single-quoted."""


def kube_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """A string, single-quoted when it reads as a number."""
    if _GO_NUMBER.fullmatch(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_str(value)


KubeDumper.add_representer(str, kube_str)


def dump_yaml(doc: Any, dumper: type[yaml.SafeDumper] = KubeDumper, **options: Any) -> str:
    """``yaml.dump`` with a KubeDumper (or a subclass), keys in the order given."""
    options.setdefault("sort_keys", False)
    options.setdefault("default_flow_style", False)
    options.setdefault("allow_unicode", True)
    text: str = yaml.dump(doc, Dumper=dumper, **options)
    return text


# libyaml's emitter where PyYAML has it (a snapshot of thousands of nodes: ~10x the pure-Python one's speed).
_CDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class FastKubeDumper(_CDumper):  # type: ignore[misc,valid-type]
    """KubeDumper's representers over libyaml's emitter (same output)."""


FastKubeDumper.add_representer(str, kube_str)


def dump_yaml_to(doc: Any, stream: IO[str], **options: Any) -> None:
    """`dump_yaml` into ``stream``, with libyaml's emitter: for large documents (cluster snapshots)."""
    options.setdefault("sort_keys", False)
    options.setdefault("default_flow_style", False)
    options.setdefault("allow_unicode", True)
    yaml.dump(doc, stream, Dumper=FastKubeDumper, **options)
