"""A rich progress bar on standard error (ingest, evaluate, analyses), drawn only when asked for and on a terminal."""

from __future__ import annotations


class progress_bar:  # noqa: N801 - used like a function, as a context manager
    """``with progress_bar(enabled, total, "ingesting") as advance: advance(1, "file.json")``."""

    def __init__(self, enabled: bool, total: int, label: str):
        self.enabled = enabled and total > 1
        self.total = total
        self.label = label
        self._progress = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            console = Console(stderr=True)
            if console.is_terminal:
                self._progress = Progress(
                    TextColumn(self.label),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    TextColumn("{task.description}", markup=False),  # a file's name, not markup: "[/x].json"
                    console=console,
                    transient=True,
                    auto_refresh=False,  # drawn on each advance: no thread writing while evaluate redirects stderr
                )
                self._progress.start()
                self._task = self._progress.add_task("", total=self.total)
                self._progress.refresh()
        return self._advance

    def _advance(self, n: float, description: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=n, description=description, refresh=True)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
