"""What an ingest did: one outcome per file, the scores evaluations disagree on, the runs that mix campaigns.

The groupings (:meth:`IngestReport.conflict_groups`, :meth:`IngestReport.mix_groups`)
are what a summary prints: one line per run and pair of campaigns, not per score.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ood_store._counts import n
from ood_store._errors import first_line
from ood_store._summary import Presented, Summary, first_rows

if TYPE_CHECKING:
    import polars as pl

Status = Literal["ingested", "present", "rejected", "skipped", "planned"]


@dataclass(frozen=True)
class FileOutcome:
    path: str
    status: Status
    reason: str | None = None  # why it was rejected, or which evaluation it duplicates
    evaluation_id: int | None = None
    run: str | None = None
    step: int | None = None
    scores: int = 0
    samples: int = 0
    evaluations: int = 1  # a W&B history holds one per step
    campaign: str | None = None
    non_finite: int = 0  # scores stored as NULL (NaN) or ±inf
    collapsed: int = 0  # results the file repeats byte for byte, stored once
    warnings: tuple[str, ...] = ()
    traceback: str | None = None  # of an internal error (a bug in ood-store), for `ood-store ingest -v`
    detected: str | None = None  # the format the file was taken for, and why
    identity_from: str | None = None  # the rule that gave run and step (evaluations.identity_from)
    evidence: str | None = None  # what in the file gave them
    campaign_from: str | None = None  # the rule that gave the campaign
    steps: tuple[int | None, ...] = ()  # of every evaluation of the file (a W&B history has one per step)


#: The longest part of an unexpected exception's message a rejection quotes.
_QUOTED = 300


def unexpected(exc: BaseException) -> str:
    """An exception ood-store did not expect, in one line: its type, its message's start, a plea to report it."""
    text = first_line(exc)
    text = text if len(text) <= _QUOTED else text[: _QUOTED - 3] + "..."
    return f"{type(exc).__name__}: {text}; please report"


@dataclass(frozen=True)
class Conflict:
    """A (run, step, task, num_fewshot, metric, filter) key on which evaluations disagree."""

    run: str
    step: int | None
    task: str
    num_fewshot: int | None
    metric: str
    filter: str
    values: list[tuple[float | None, str]]  # (value, source path), in ingest order; None for NaN
    chosen: str  # the source path whose value `scores` shows
    campaigns: tuple[str | None, ...] = ()  # of each value
    chosen_campaign: str | None = None


@dataclass(frozen=True)
class CampaignMix:
    """A run whose checkpoints come from several campaigns, this ingest having added to some of them."""

    run: str
    campaigns: tuple[tuple[str | None, int], ...]  # each campaign of the run and its checkpoints (distinct steps)
    added: tuple[str | None, ...]  # the campaigns this ingest added evaluations to
    only: tuple[int, ...]  # for each of ``campaigns``, its checkpoints at steps no other campaign has


#: The columns of :meth:`IngestReport.frame`, one row per file.
FILE_COLUMNS = (
    "path", "status", "format", "run", "step", "campaign", "evaluations", "scores", "samples", "non_finite",
    "collapsed", "reason",
)  # fmt: skip


@dataclass(repr=False)
class IngestReport(Presented):
    """What an ingest did with each file (``files``), the scores evaluations disagree on, the runs that mix
    campaigns. ``frame()`` has one row per file; ``summary()`` is the counts and the files worth a look.
    """

    files: list[FileOutcome] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    campaign_mixes: list[CampaignMix] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # about the ingest as a whole (not one file)

    def _with(self, status: Status) -> list[FileOutcome]:
        return [f for f in self.files if f.status == status]

    # The files by outcome: written, already in the store, refused, not results, or (a dry run) to be written.
    ingested = property(lambda self: self._with("ingested"))
    planned = property(lambda self: self._with("planned"))
    present = property(lambda self: self._with("present"))
    rejected = property(lambda self: self._with("rejected"))
    skipped = property(lambda self: self._with("skipped"))

    @property
    def ok(self) -> bool:
        return not self.rejected

    @property
    def collapsed(self) -> int:
        """Results that the files written (or, in a dry run, to be written) repeat byte for byte, each stored once."""
        return sum(f.collapsed for f in (self.planned or self.ingested))

    def collapsed_note(self) -> str | None:
        """The line that says how many repeated results were stored once, or None."""
        files = [f for f in (self.planned or self.ingested) if f.collapsed]
        if not files:
            return None
        return (f"Stored once: {n(self.collapsed, 'result')} repeated byte for byte in "
                f"{n(len(files), 'file')} ({files[0].path}{' and more' if len(files) > 1 else ''}).")  # fmt: skip

    @property
    def file_warnings(self) -> list[str]:
        """Every file's warnings (values stored with less than the file says), then the ingest's own."""
        return [w for f in self.files for w in f.warnings] + self.warnings

    def frame(self) -> pl.DataFrame:
        """One row per file (:data:`FILE_COLUMNS`): what became of it, the run and step it was stored as, its
        counts, and why it was refused, skipped or is present already."""
        import polars as pl

        rows = [
            (f.path, f.status, f.detected, f.run, f.step, f.campaign, f.evaluations if f.status in ("ingested",
             "planned") else 0, f.scores, f.samples, f.non_finite, f.collapsed, f.reason)
            for f in self.files
        ]  # fmt: skip
        schema = dict.fromkeys(FILE_COLUMNS, pl.String) | {
            "step": pl.Int64, "evaluations": pl.Int64, "scores": pl.Int64, "samples": pl.Int64, "non_finite": pl.Int64,
            "collapsed": pl.Int64,
        }  # fmt: skip
        return pl.DataFrame(rows, schema=schema, orient="row")

    def summary(self) -> Summary:
        """The counts by outcome in the title; the files that were not simply stored (rejected first), or every
        file when all were; notes on conflicts, campaign mixes and warnings."""
        import polars as pl

        written = self.planned if self.planned else self.ingested
        verb = "would ingest" if self.planned else "ingested"
        scores = sum(f.scores for f in written)
        title = (
            f"IngestReport: {n(len(written), 'file')} {verb} ({n(scores, 'score')}), "
            f"{len(self.present):,} already present, {len(self.rejected):,} rejected, {len(self.skipped):,} skipped"
        )
        frame = self.frame()
        worth = frame.filter(pl.col("status").is_in(["rejected", "present", "skipped"]))
        shown = worth if worth.height else frame
        order = {"rejected": 0, "present": 1, "skipped": 2}
        shown = shown.sort(pl.col("status").replace_strict(order, default=3), maintain_order=True)
        shown, notes = first_rows(shown.select("path", "status", "run", "step", "scores", "reason"), "files",
                                  "report.frame()")  # fmt: skip
        if self.conflicts:
            runs = len({c.run for c in self.conflicts})
            notes += (f"Evaluations disagree on {n(len(self.conflicts), 'score')} in {n(runs, 'run')} "
                      "(the view score_conflicts lists them).",)  # fmt: skip
        mixed = {run for group in self.mix_groups() for run in group.runs}
        if mixed:
            notes += (f"{n(len(mixed), 'run')} mix campaigns.",)
        collapsed = self.collapsed_note()
        if collapsed:
            notes += (collapsed,)
        notes += tuple(f"Warning: {w}" for w in self.file_warnings)
        return Summary(title, shown, notes)

    def conflict_groups(self) -> list[ConflictGroup]:
        """The conflicts by run and the campaigns whose evaluations disagree, largest first."""
        groups: dict[tuple[str, tuple[str | None, ...]], list[Conflict]] = {}
        for conflict in self.conflicts:
            campaigns = tuple(sorted(set(conflict.campaigns), key=campaign_order))
            groups.setdefault((conflict.run, campaigns), []).append(conflict)
        out = [
            ConflictGroup(run, campaigns, len(items), len({c.step for c in items}))
            for (run, campaigns), items in groups.items()
        ]
        return sorted(out, key=lambda g: (-g.scores, g.run, [campaign_order(c) for c in g.campaigns]))

    def mix_groups(self) -> list[MixGroup]:
        """The runs that mix campaigns, by which campaigns they mix and which this ingest added to."""
        groups: dict[tuple[tuple[str | None, ...], tuple[str | None, ...]], list[CampaignMix]] = {}
        for mix in self.campaign_mixes:
            groups.setdefault((tuple(c for c, _ in mix.campaigns), mix.added), []).append(mix)
        return [MixGroup(names, added, tuple(mixes)) for (names, added), mixes in groups.items()]


@dataclass(frozen=True)
class ConflictGroup:
    """``scores`` keys at ``steps`` steps of ``run`` on which evaluations of ``campaigns`` disagree."""

    run: str
    campaigns: tuple[str | None, ...]
    scores: int
    steps: int


@dataclass(frozen=True)
class MixGroup:
    """Runs whose checkpoints come from ``campaigns``, this ingest having added to ``added`` of them."""

    campaigns: tuple[str | None, ...]
    added: tuple[str | None, ...]
    mixes: tuple[CampaignMix, ...]

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(mix.run for mix in self.mixes)


def campaign_order(campaign: str | None) -> tuple[bool, str]:
    """Campaigns by name, no campaign (None) last."""
    return campaign is None, campaign or ""
