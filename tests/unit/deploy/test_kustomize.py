"""The committed kustomize base (deploy/kustomize) is exactly what the renderer makes: it can never drift."""

from __future__ import annotations

from pathlib import Path

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser
from kubesched.deploy import render

BASE = Path(__file__).resolve().parents[3] / "deploy" / "kustomize"
REGENERATE = "kubesched manifests all --kustomize -o deploy/kustomize"


def test_the_committed_base_is_what_the_renderer_makes() -> None:
    args = build_parser().parse_args(["manifests", "all", "--kustomize", "-o", str(BASE)])
    expected = render.kustomize_base(manifests_cmd.build_plan(args))
    # Certificates a user made in certs/ are theirs (and git-ignored); everything else is the renderer's.
    committed = {
        str(p.relative_to(BASE)): p.read_text()
        for p in sorted(BASE.rglob("*"))
        if p.is_file() and (p.parent.name != render.CERTS_DIR or p.name == ".gitignore")
    }
    assert sorted(committed) == sorted(expected), f"files differ; regenerate with: {REGENERATE}"
    for name, text in expected.items():
        assert committed[name] == text, f"{name} differs; regenerate with: {REGENERATE}"
