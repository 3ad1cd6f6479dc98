"""Progress bars of the commands that embed long texts: ``store`` and ``document add``.

A long memory or document is cut into chunks and each is embedded; that is where the
time goes (seconds to a minute for 100,000 characters). ``embedding_bar`` shows the
chunks embedded out of all on stderr while its block runs, from the counts the core
reports (``core.embedding.reporting``) when this process embeds, or from a job's
progress (``on_progress(done, total)``) when a server does. Nothing is drawn for
``--json`` or when stderr is not a terminal, and the bar is gone once the block ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from hindsight.cli.output import make_console
from hindsight.core.embedding import reporting

Advance = Callable[[int, int], None]


@contextmanager
def embedding_bar(label: str, quiet: bool) -> Iterator[Advance]:
    """A bar of chunks embedded while the block runs; yields its ``advance(done, total)``
    (for progress reported from elsewhere, such as a server's job)."""
    console = make_console(stderr=True)
    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("chunks embedded"),
        TimeRemainingColumn(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )
    with progress:
        task = progress.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        with reporting(advance):
            yield advance
