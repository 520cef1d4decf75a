"""Hostile cluster files: too large, too many objects, nested too deeply, aliases that explode, quantities
that are not quantities. Each is refused with its reason (and the field, where there is one), quickly."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kubesched.cluster import files
from kubesched.cluster.files import ClusterFileError, read_cluster


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:  # sparse: no disk, no memory, just a size
        f.truncate(files.MAX_FILE_BYTES + 1)
    start = time.monotonic()
    with pytest.raises(ClusterFileError, match=r"huge.yaml: larger than 512 MiB, the limit of a cluster file"):
        read_cluster(path)
    assert time.monotonic() - start < 1.0  # refused from its size, not after reading it


@pytest.mark.parametrize("name", ["many.yaml", "many.json"])
def test_more_objects_than_the_limit_are_refused_naming_the_first_one_over(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "MAX_OBJECTS", 3)
    items = [{"kind": "Namespace", "metadata": {"name": f"ns{i}"}} for i in range(4)]
    path = write(tmp_path, json.dumps({"kind": "List", "items": items}), name)
    with pytest.raises(ClusterFileError, match=r"\$\.items\[3\]: more than 3 objects, the limit of a cluster file"):
        read_cluster(path)


def test_the_object_limit_is_in_the_millions() -> None:
    assert files.MAX_OBJECTS == 1_000_000


@pytest.mark.parametrize("name", ["deep.json", "deep.yaml"])
def test_json_nested_too_deeply_is_refused(tmp_path: Path, name: str) -> None:
    depth = 100_000
    path = write(tmp_path, '{"kind": "List", "items": [' + "[" * depth + "]" * depth + "]}", name)
    with pytest.raises(ClusterFileError, match=r"nested too deeply|exceeded maximum nesting depth"):
        read_cluster(path)


def test_yaml_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    text = "".join("  " * i + "a:\n" for i in range(5000)) + "  " * 5000 + "b"
    with pytest.raises(ClusterFileError, match="not valid YAML or JSON: exceeded maximum nesting depth"):
        read_cluster(write(tmp_path, text))


def test_aliases_that_expand_past_the_limit_are_refused_before_they_are_walked(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]  # 10**12 values
    start = time.monotonic()
    with pytest.raises(ClusterFileError, match="has more than 50000000 values once YAML aliases are expanded"):
        read_cluster(write(tmp_path, "\n".join(lines)))
    assert time.monotonic() - start < 5.0


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match="recursive YAML alias"):
        read_cluster(write(tmp_path, "- &a {kind: Namespace, metadata: {name: x}, loop: [*a]}"))


def test_a_file_that_is_not_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"kind: List\nitems: [\xff\xfe]")
    with pytest.raises(ClusterFileError, match=r"binary.yaml: not UTF-8 text \(byte 19\)"):
        read_cluster(path)


@pytest.mark.parametrize(
    ("quantity", "problem"),
    [("abc", "quantities must match the regular expression"), ("-4", "must be greater than or equal to 0")],
)
def test_a_node_quantity_that_is_not_one_is_refused_naming_the_field(
    tmp_path: Path, quantity: str, problem: str
) -> None:
    text = f"- {{metadata: {{name: n}}, status: {{allocatable: {{cpu: '{quantity}'}}}}}}"
    with pytest.raises(
        ClusterFileError, match=rf"\$\[0\]: status.allocatable.cpu: Invalid value: '{quantity}': {problem}"
    ):
        read_cluster(write(tmp_path, text))


def test_a_stored_pods_quantity_is_checked_on_the_fast_path_too(tmp_path: Path) -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "1"},
        "spec": {"initContainers": [{"name": "i", "resources": {"limits": {"memory": "lots"}}}]},
    }
    path = write(tmp_path, json.dumps({"kind": "List", "items": [pod]}), "c.json")
    with pytest.raises(
        ClusterFileError, match=r"items\[0\]: spec.initContainers\[0\].resources.limits.memory: Invalid value: 'lots'"
    ):
        read_cluster(path)


def test_huge_quantities_are_kept_as_kube_apiserver_keeps_them(tmp_path: Path) -> None:
    # kube-apiserver stores "1e9999"; the scheduler's tables saturate it (core/quantity.py).
    text = "- {metadata: {name: n}, status: {allocatable: {cpu: '1e9999', memory: 99999999999999999999Ei}}}"
    (node,) = read_cluster(write(tmp_path, text)).nodes
    assert node.status.allocatable == {"cpu": "1e9999", "memory": "99999999999999999999Ei"}


def test_yaml_over_its_own_limit_is_refused_pointing_at_json(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as f:
        f.truncate(files.MAX_YAML_BYTES + 1)
    with pytest.raises(ClusterFileError, match=r"big.yaml: YAML larger than 64 MiB, .* JSON may be up to 512 MiB"):
        read_cluster(path)
