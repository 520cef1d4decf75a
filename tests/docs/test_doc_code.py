"""The docs' code cannot rot: their Python blocks run, blocks that quote an example file match it, and their
`kubesched …` command lines parse with the CLI's own parser."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import build_parser
from kubesched.config.profiles import parse
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import Handle
from kubesched.framework.runtime import Framework
from kubesched.plugins import in_tree
from kubesched.scheduler.profiles.manager import build

ROOT = Path(__file__).resolve().parents[2]
RUN = ["docs/plugins.md", "docs/policies.md", "docs/extender.md", "docs/zh-CN/README.md"]
# The production pages of the Chinese docs (Helm, authentication, metrics, reliability, certificates).
ZH_CN = [f"docs/zh-CN/{page}.md" for page in ("helm", "security", "metrics", "reliability", "certificates")]
COMMANDS = [*RUN, "README.md", *ZH_CN]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`(kubesched [^`]+)`")
QUOTED = re.compile(r"# (examples/[\w./-]+)")


def blocks(page: str, *langs: str) -> list[str]:
    return [body for lang, body in FENCE.findall((ROOT / page).read_text()) if lang in langs]


@pytest.mark.parametrize("page", RUN)
def test_python_blocks_run_in_order(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": f"doc_{Path(page).stem}"}
    ran = 0
    for i, code in enumerate(blocks(page, "python")):
        quoted = QUOTED.match(code)
        if quoted:
            example = ROOT / quoted.group(1)
            assert example.is_file(), f"{page}: block {i} quotes {quoted.group(1)}, which does not exist"
            assert code == example.read_text(), f"{page}: block {i} differs from {quoted.group(1)}"
            continue
        exec(compile(code, f"{page}[python block {i}]", "exec"), namespace)
        ran += 1
    assert blocks(page, "python"), f"{page} has no Python block"


def checked_names(page: str) -> tuple[dict[str, int], dict[int, set[str]]]:
    """The classes and functions a page's run blocks define (by block), and per block holding an ``assert``
    the names it uses; blocks quoting an example file are left to tests/docs/test_examples.py."""
    defined: dict[str, int] = {}
    asserting: dict[int, set[str]] = {}
    for i, code in enumerate(blocks(page, "python")):
        if QUOTED.match(code):
            continue
        tree = ast.parse(code)
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.setdefault(node.name, i)
        if any(isinstance(node, ast.Assert) for node in ast.walk(tree)):
            asserting[i] = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return defined, asserting


def run_page(page: str) -> dict[str, Any]:
    """The namespace a page's Python blocks leave, run in order (the quoted example files are skipped)."""
    namespace: dict[str, Any] = {"__name__": f"doc_{Path(page).stem}"}
    for i, code in enumerate(blocks(page, "python")):
        if not QUOTED.match(code):
            exec(compile(code, f"{page}[python block {i}]", "exec"), namespace)
    return namespace


def test_the_plugin_guide_s_configuration_runs_its_plugin_and_its_errors_are_the_quoted_ones() -> None:
    """docs/plugins.md, "Args and pluginConfig": its YAML enables PreferZone with weight 3 and zone-a, and the
    two bad values the page quotes are refused with the messages it quotes."""
    namespace = run_page("docs/plugins.md")
    (yaml_block,) = blocks("docs/plugins.md", "yaml")
    registry = in_tree()
    registry.register(namespace["PreferZone"], "docs/plugins.md")
    head = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

    def built(doc: dict[str, Any]) -> Framework:
        profiles = build(parse({**head, **doc}), registry, lambda name: Handle(scheduler_name=name)).profiles
        return profiles["kubesched"].framework

    doc = yaml.safe_load(yaml_block)
    framework = built(doc)
    ((plugin, weight),) = [(p, w) for p, w in framework.score if p.name == "PreferZone"]
    assert (weight, plugin.args.zone, plugin.args.bonus) == (3, "zone-a", 100)
    text = (ROOT / "docs/plugins.md").read_text()
    for args, quoted in [
        ({"zonee": "zone-a"}, "Object contains unknown field `zonee`"),
        ({"zone": "a", "bonus": 500}, "bonus: must be in [0, 100], got 500"),
    ]:
        assert quoted in text
        doc["profiles"][0]["pluginConfig"][0]["args"] = args
        with pytest.raises(ConfigurationError) as refused:
            built(doc)
        assert f"profiles[0].pluginConfig[0].args: {quoted}" in str(refused.value)


@pytest.mark.parametrize("page", RUN)
def test_every_example_is_checked_by_an_assert(page: str) -> None:
    """Running a block proves only that it runs: every class or function a page defines is used in a block
    (the same or a later one) that asserts something, so what the page teaches is what the code does."""
    defined, asserting = checked_names(page)
    run = [code for code in blocks(page, "python") if not QUOTED.match(code)]
    assert asserting or not run, f"{page}: no Python block asserts anything"
    unchecked = [
        name for name, i in defined.items() if not any(j >= i and name in used for j, used in asserting.items())
    ]
    assert unchecked == [], f"{page}: defined but never used in a block that asserts: {unchecked}"


def command_lines(page: str) -> list[str]:
    text = (ROOT / page).read_text()
    lines = []
    for body in blocks(page, "sh", "console", "bash", "shell", ""):
        for line in body.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("kubesched "):
                lines.append(line)
    if page != "README.md":  # the README's command table shows synopses, not command lines
        for span in INLINE.findall(text):
            span = " ".join(span.split())
            # A command named in prose (`kubesched extender serve`) must exist: its --help must answer.
            lines.append(span if " -" in span else f"{span} --help")
    return lines


def parses(line: str) -> str | None:
    """None if the CLI's parser takes the line (up to a pipe or redirection), else why not."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    argv = []
    for token in lexer:
        if token and set(token) <= set("|&;<>"):
            break
        argv.append(token)
    try:
        build_parser().parse_args(argv[1:])
    except SystemExit as stop:
        return None if stop.code == 0 else f"exit {stop.code}"
    return None


@pytest.mark.parametrize("page", COMMANDS)
def test_kubesched_command_lines_parse(page: str, capsys: pytest.CaptureFixture[str]) -> None:
    lines = command_lines(page)
    assert lines, f"{page} shows no kubesched command"
    bad = {line: why for line in lines if (why := parses(line)) is not None}
    assert bad == {}, capsys.readouterr().err


def test_a_broken_command_line_is_caught() -> None:
    assert parses("kubesched scheduler run --clusterr examples/cluster.yaml") is not None
    assert parses("kubesched extender serve --nodes examples/nodes.yaml") is not None  # --policy is required
    assert parses("kubesched scheduler run --cluster examples/cluster.yaml -o json") is None


def test_every_chinese_page_is_checked_and_linked_from_the_chinese_readme() -> None:
    """A page added to docs/zh-CN has its command lines checked (ZH_CN) and is reachable from its README."""
    pages = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "zh-CN").glob("*.md") if p.name != "README.md")
    assert pages == sorted(ZH_CN)
    readme = (ROOT / "docs" / "zh-CN" / "README.md").read_text()
    assert [p for p in pages if f"]({Path(p).name})" not in readme] == []
