"""Tables and progress for people at a terminal (rich); plain text for pipes, files and tests.

rich is used only when the stream is a TTY, and a table is rendered once, so piping or redirecting output
gives the same bytes as before and big outputs pay nothing for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO


def is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> bool:
    """Print a rich table on stdout if it is a terminal; False (nothing printed) otherwise."""
    if not is_tty(sys.stdout):
        return False
    from rich.console import Console
    from rich.table import Table

    t = Table(*headers, title=title, header_style="bold", show_edge=False, pad_edge=False)
    for row in rows:
        t.add_row(*row)
    Console(file=sys.stdout, soft_wrap=False).print(t)
    return True


@contextmanager
def progress(message: str) -> Iterator[None]:
    """A spinner on stderr while a long step runs; nothing when stderr is not a terminal (logs stay as they were)."""
    if not is_tty(sys.stderr):
        yield
        return
    from rich.console import Console

    with Console(file=sys.stderr).status(message):
        yield
