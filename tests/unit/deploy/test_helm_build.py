"""The helm build's cache: what counts as built, the $KUBESCHED_HELM override, and failures as BuildError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.testing import build


def fake_build(root: Path, version: str, recipe: object) -> Path:
    key = root / f"helm-v{version}-{build._platform()}"
    (key / "bin").mkdir(parents=True)
    (key / "bin" / "helm").write_text("#!/bin/sh\n")
    (key / "stamp.json").write_text(json.dumps({"version": version, "recipe": recipe}))
    return key / "bin" / "helm"


def test_only_a_helm_of_this_version_and_recipe_counts_as_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBESCHED_CACHE", str(tmp_path))
    monkeypatch.delenv("KUBESCHED_HELM", raising=False)
    assert build.helm_cached("9.9.9") is None
    old = fake_build(tmp_path / "a", "9.9.9", 1)
    monkeypatch.setenv("KUBESCHED_CACHE", str(tmp_path / "a"))
    assert build.helm_cached("9.9.9") is None  # built by an older recipe (no Kubernetes version): built again
    old.parent.parent.joinpath("stamp.json").write_text(json.dumps({"version": "9.9.9", "recipe": build._HELM_RECIPE}))
    assert build.helm_cached("9.9.9") == old
    old.unlink()
    assert build.helm_cached("9.9.9") is None


def test_the_override_must_be_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBESCHED_HELM", str(tmp_path / "none"))
    with pytest.raises(build.BuildError, match=r"KUBESCHED_HELM=.* is not a file"):
        build.helm_cached()
    (tmp_path / "helm").write_text("")
    monkeypatch.setenv("KUBESCHED_HELM", str(tmp_path / "helm"))
    assert build.ensure_helm() == tmp_path / "helm"


def test_without_go_the_build_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBESCHED_CACHE", str(tmp_path))
    monkeypatch.delenv("KUBESCHED_HELM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(build.BuildError, match="go toolchain is not on PATH"):
        build.ensure_helm("9.9.9")


def test_a_failing_step_ends_in_build_error_with_the_log(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    with pytest.raises(build.BuildError, match="exit 3"):
        build._run(["sh", "-c", "echo boom; exit 3"], tmp_path, {"PATH": "/usr/bin:/bin"}, log)
    assert "boom" in log.read_text()
    with pytest.raises(build.BuildError, match="took more than 0s"):
        build._run(["sleep", "5"], tmp_path, {"PATH": "/usr/bin:/bin"}, log, timeout=0.2)
