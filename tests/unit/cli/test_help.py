"""Every command and subcommand explains itself in --help: a description and at least one example."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from kubesched.cli.main import build_parser, main


def commands(parser: argparse.ArgumentParser, path: str = "kubesched") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, f"{path} {name}")


def test_every_command_has_a_description_and_an_example() -> None:
    found = dict(commands(build_parser()))
    assert len(found) >= 15, sorted(found)
    missing = [
        path
        for path, parser in found.items()
        if not parser.description or "Example" not in (parser.epilog or "") or "kubesched " not in (parser.epilog or "")
    ]
    assert missing == []
    # The examples survive formatting (RawDescriptionHelpFormatter keeps their lines).
    for path, parser in found.items():
        assert parser.epilog is not None and parser.epilog.strip().splitlines()[1].strip() in parser.format_help(), path


@pytest.mark.parametrize("argv", [["--help"], ["scheduler", "run", "--help"], ["plugins", "list", "--help"]])
def test_help_prints_and_exits_0(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as end:
        main(argv)
    assert end.value.code == 0
    assert "Example" in capsys.readouterr().out
