"""The docs' code cannot rot: their Python blocks run, blocks that quote an example file match it, and their
`kubesched …` command lines parse with the CLI's own parser."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kubesched.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
RUN = ["docs/plugins.md", "docs/policies.md", "docs/extender.md", "docs/zh-CN/README.md"]
COMMANDS = [*RUN, "README.md"]
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
