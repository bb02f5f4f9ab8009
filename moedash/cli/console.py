"""What the CLI prints: results on stdout, progress and errors on stderr, through rich.

Errors are printed through the same console the progress bar draws on, so rich writes
them above the bar instead of into it. The bar is drawn only on a terminal (as before
rich: logs and pipes get no bar). User-supplied text (file names, messages) is never
read as rich markup or emoji codes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

# A file or pipe has no width: rich would wrap tables at 80 columns and fold long paths
# in CI logs, which also breaks `grep`. Tables take their natural width there instead.
_UNBOUNDED_WIDTH = 400


def _console(*, stderr: bool) -> Console:
    console = Console(stderr=stderr, highlight=False, markup=False, emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _UNBOUNDED_WIDTH
    return console


class Output:
    """The two consoles of one command invocation (built per call, not at import)."""

    def __init__(self) -> None:
        self.out = _console(stderr=False)
        self.err = _console(stderr=True)

    def line(self, text: str) -> None:
        """One line of result text on stdout, never wrapped."""
        self.out.print(text, soft_wrap=True)

    def note(self, text: str) -> None:
        """One line of commentary on stderr (keeps stdout to the result)."""
        self.err.print(text, soft_wrap=True)

    def error(self, text: str) -> None:
        """``error: <text>`` on stderr, above a running progress bar, never wrapped."""
        self.err.print(Text("error: ", style="bold red") + Text(text), soft_wrap=True)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        """A summary table on stdout: one line per row, columns separated by spaces."""
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in header:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*(Text(str(cell)) for cell in row))
        self.out.print(table)

    @contextmanager
    def progress(self, label: str, total: int) -> Iterator[Steps]:
        """A bar of ``total`` steps on stderr while the block runs (none off a terminal)."""
        bar = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[item]}", markup=False),
            console=self.err,
            disable=not self.err.is_terminal,
        )
        with bar:
            task = bar.add_task(label, total=total, item="")
            yield Steps(bar, task)
            bar.update(task, item="")  # the finished bar names no file


class Steps:
    """The handle a command moves its progress bar with."""

    def __init__(self, bar: Progress, task: TaskID) -> None:
        self._bar = bar
        self._task = task

    def start(self, item: str) -> None:
        """Show ``item`` (e.g. a file name) as the one being worked on."""
        self._bar.update(self._task, item=item)

    def done(self) -> None:
        """One step finished."""
        self._bar.advance(self._task)
