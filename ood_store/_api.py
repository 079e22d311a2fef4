"""The Store: one DuckDB file holding every score of every run, and a method for each stage of a study.

:class:`Store` is the store layer's :class:`~ood_store._store.database.Database` (the file, its lock,
the sandbox for SQL) with the stages on top: ingest, evaluate, the scores as a frame, saved analyses,
dumps, merges and Every Eval Ever exports. The stages themselves are imported when a method needs
them, so that opening a store loads neither lm-eval nor matplotlib.

>>> import ood_store
>>> with ood_store.open(tmp / "results.duckdb") as store:
...     report = store.ingest([pythia_160m], attributes={"family": "pythia"})
...     frame = store.scores(tasks="lambada_openai", metric="acc")
>>> len(report.ingested), frame.height
(27, 27)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import polars as pl

from ood_store._errors import AnalysisError, InputError, StoreError
from ood_store._store import selection
from ood_store._store.connection import DEFAULT_LOCK_TIMEOUT
from ood_store._store.database import Database, connection, damage_named, discard_if_empty, released
from ood_store._store.database import target as store_target

if TYPE_CHECKING:
    from ood_store._analysis.results import PartialCorrelations
    from ood_store._evaluate.collect import Collected
    from ood_store._evaluate.options import EvaluateOptions
    from ood_store._evaluate.runner import EvaluateReport
    from ood_store._export.eee import EeeExport, EeeSource
    from ood_store._ingest import IngestReport, Overrides
    from ood_store._store.dump import DumpReport
    from ood_store._store.lake import VacuumReport
    from ood_store._store.merge import MergeReport

DEFAULT_DB = "ood_store.duckdb"
DB_ENV = "OOD_STORE_DB"


def default_path() -> Path:
    """``$OOD_STORE_DB`` if set, else ``ood_store.duckdb`` in the working directory."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


def open(  # noqa: A001 - mirrors io.open / sqlite3.connect naming
    path: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    allow_files: Iterable[str | os.PathLike[str]] = (),
    data_path: str | os.PathLike[str] | None = None,
    at: int | None = None,
) -> Store:
    """Open (and, unless ``read_only``, create or migrate) the store at ``path``.

    Parameters
    ----------
    path
        The DuckDB file, or a lake: ``ducklake:postgres:dbname=lab host=... user=...``,
        ``ducklake:sqlite:/path/lab.sqlite`` or ``ducklake:/path/lab.ducklake`` (the ``lake``
        extra; docs/how-to/lab.md). Defaults to ``$OOD_STORE_DB``, else ``ood_store.duckdb``.
    read_only
        Open without taking the write lock. The store must exist and be at the
        current schema version. Another process writing the file still blocks
        a read-only open (a DuckDB rule), up to ``lock_timeout``.
    lock_timeout
        Seconds to wait for another process that holds the store.
    allow_files
        Folders whose files SQL run by :meth:`Store.query` may read (``read_csv('DIR/x.csv')``);
        by default it can read the store and nothing else.
    data_path
        Where a new lake keeps its Parquet files (a folder, or ``s3://bucket/prefix/``): given, the
        lake is created when its catalog holds none. An existing lake's data path is read from its catalog.
    at
        Open a lake read-only as it was at this snapshot (``ood-store snapshots`` lists them).

    Returns
    -------
    Store
        Use it as a context manager, or call :meth:`Store.close`.

    >>> store = ood_store.open(tmp / "empty.duckdb")
    >>> store.runs().height
    0
    >>> store.close()
    """
    where = store_target(path if path is not None else default_path())
    return Store(where, read_only, lock_timeout, allow_files, data_path=data_path, snapshot=at)


class Store(Database):
    """A results store: the DuckDB file and the study's stages. Open one with :func:`ood_store.open`.

    Every method names a damaged store file in one line (:class:`~ood_store.StoreDamagedError`).
    """

    # -- reading -----------------------------------------------------------
    @damage_named
    def runs(self) -> pl.DataFrame:
        """One row per run: attributes, checkpoints, steps, evaluations and tasks.

        >>> pythia.runs().select("run", "family", "checkpoints", "tasks")
        shape: (1, 4)
        ┌─────────────────────────────┬────────┬─────────────┬───────┐
        │ run                         ┆ family ┆ checkpoints ┆ tasks │
        │ ---                         ┆ ---    ┆ ---         ┆ ---   │
        │ str                         ┆ str    ┆ i64         ┆ i64   │
        ╞═════════════════════════════╪════════╪═════════════╪═══════╡
        │ EleutherAI/pythia-v1.1-160m ┆ pythia ┆ 27          ┆ 87    │
        └─────────────────────────────┴────────┴─────────────┴───────┘
        """
        return selection.runs(self)

    @damage_named
    def tasks(self, run: str | None = None) -> pl.DataFrame:
        """One row per (task, metric, filter, num_fewshot) in ``scores``, optionally for one run.

        >>> pythia.tasks().filter(pl.col("task") == "piqa").select("task", "metric", "runs", "scores")
        shape: (2, 4)
        ┌──────┬──────────┬──────┬────────┐
        │ task ┆ metric   ┆ runs ┆ scores │
        │ ---  ┆ ---      ┆ ---  ┆ ---    │
        │ str  ┆ str      ┆ i64  ┆ i64    │
        ╞══════╪══════════╪══════╪════════╡
        │ piqa ┆ acc      ┆ 1    ┆ 27     │
        │ piqa ┆ acc_norm ┆ 1    ┆ 27     │
        └──────┴──────────┴──────┴────────┘
        """
        return selection.tasks(self, run)

    @damage_named
    def scores(
        self,
        *,
        runs: str | Sequence[str] | None = None,
        tasks: str | Sequence[str] | None = None,
        metric: str | None = None,
        filter: str | None = None,  # noqa: A002 - lm-eval's word, and the column's
        num_fewshot: int | None = None,
        campaign: str | None = None,
    ) -> pl.DataFrame:
        """The scores as one long frame: a row per (run, step, task, num_fewshot, metric, filter).

        The rows of the ``scores`` view (where several evaluations hold a key, the newest), or of
        ``campaign_scores`` for one ``campaign``. Each argument given narrows the frame; a run, task,
        metric, filter or campaign the store does not hold is an :class:`~ood_store.InputError` naming
        the argument, not an empty frame. Columns: ``run, step, task, num_fewshot, metric, filter,
        value, stderr, n_samples, campaign, evaluation_id``; rows ordered by run, step, task.

        >>> frame = pythia.scores(tasks=["piqa", "arc_easy"], metric="acc")
        >>> frame.select("step", "task", "value").head(2)
        shape: (2, 3)
        ┌──────┬──────────┬──────────┐
        │ step ┆ task     ┆ value    │
        │ ---  ┆ ---      ┆ ---      │
        │ i64  ┆ str      ┆ f64      │
        ╞══════╪══════════╪══════════╡
        │ 0    ┆ arc_easy ┆ 0.257997 │
        │ 0    ┆ piqa     ┆ 0.524483 │
        └──────┴──────────┴──────────┘
        >>> pythia.scores(tasks="piqaa")
        Traceback (most recent call last):
        ...
        ood_store._errors.InputError: tasks: the store holds no task 'piqaa'; did you mean piqa?
        """
        return selection.scores(
            self,
            runs=runs,
            tasks=tasks,
            metric=metric,
            filter=filter,
            num_fewshot=num_fewshot,
            campaign=campaign,
        )

    # -- writing -----------------------------------------------------------
    @damage_named
    def ingest(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        overrides: Overrides | None = None,
        campaign: str | None = None,
        attributes: Mapping[str, Any] | list[str] | None = None,
        attribute_file: str | os.PathLike[str] | None = None,
        samples: bool = True,
        progress: bool = False,
        wandb_map: Sequence[str] = (),
        wandb_step: str | None = None,
        wandb_config: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
    ) -> IngestReport:
        """Ingest results files (lm-eval, Every Eval Ever, inspect_ai, W&B history), folders or globs.

        Parameters
        ----------
        paths
            Files, folders (searched for results files) or globs.
        overrides
            The run, step or campaign to use instead of what the files say (:class:`ood_store.Overrides`).
        campaign
            The evaluation campaign of every file (default: the folder each file sits in).
        attributes
            Run attributes (family, size, in_domain, seed, or any key) for every run the files name.
        attribute_file
            A CSV, TOML or YAML file of run attributes by run name or glob.
        samples
            Store the per-sample rows of lm-eval's samples files too.
        progress
            Show a progress bar.
        wandb_map, wandb_step, wandb_config
            How W&B history columns map to tasks and metrics, which column is the step, and the run's
            config file.
        dry_run
            Check and plan only: the report says what would go in, nothing is written (a read-only
            store will do).

        Returns
        -------
        IngestReport
            What went in, what was already there and what was refused (``summary()``, ``files``).
        """
        from ood_store._ingest import Overrides, ingest
        from ood_store._store.attribute_rules import read_attribute_file

        if not dry_run:
            self._require_writable("ingest")
        rules = read_attribute_file(attribute_file) if attribute_file is not None else []
        overrides = overrides or Overrides()
        if campaign is not None:
            overrides = replace(overrides, campaign=campaign)
        report = ingest(
            connection(self),
            [str(p) for p in paths],
            overrides=overrides,
            attributes=attributes,
            attribute_rules=rules,
            samples=samples,
            progress=progress,
            wandb_map=wandb_map,
            wandb_step=wandb_step,
            wandb_config=None if wandb_config is None else str(wandb_config),
            dry_run=dry_run,
        )
        if not report.ingested:
            discard_if_empty(self)
        return report

    @damage_named
    def evaluate(
        self,
        checkpoints: Iterable[str | os.PathLike[str]] = (),
        *,
        run: str | None = None,
        tasks: Sequence[str] = (),
        run_file: str | os.PathLike[str] | None = None,
        attribute_file: str | os.PathLike[str] | None = None,
        pattern: str | None = None,
        verbalizer: str | Sequence[str] | None = None,
        neutral: str | None = None,
        **options: Unpack[EvaluateOptions],
    ) -> EvaluateReport:
        """Evaluate checkpoints (or a study's runs) with lm-eval and store the results, resumably.

        Everything ``ood-store evaluate`` takes: ``run_file`` (a TOML or YAML file with the run's name,
        attributes and ``[suite]`` table), ``attribute_file`` (attributes by run name or glob, for one run
        or every run of a study), the ood_nli suite's ``pattern``, ``verbalizer`` and ``neutral`` (over
        the run file's, or over every run's ``[suite]`` in a study), and the runner's keywords
        (:class:`~ood_store._evaluate.options.EvaluateOptions`; see
        :func:`ood_store._evaluate.runner.evaluate` for each). ``attributes`` win over
        ``attribute_file``, which wins over ``run_file``. While it runs, the store's connection is
        closed and opened for each commit only, so that other processes can read the store; it is
        open again when this returns.

        Returns
        -------
        EvaluateReport
            The checkpoints evaluated, skipped, failed or submitted (``summary()``).
        """
        from ood_store._evaluate.request import resolve
        from ood_store._evaluate.runner import evaluate

        self._require_writable("evaluate")
        try:
            run, resolved = resolve(
                run=run,
                run_file=run_file,
                attribute_file=attribute_file,
                suite={"pattern": pattern, "verbalizer": verbalizer, "neutral": neutral},
                options=options,
            )
            return evaluate(self, [str(c) for c in checkpoints], run=run, tasks=tasks, **resolved)
        except BaseException:
            discard_if_empty(self)  # refused before anything was stored: leave no store file
            raise

    @damage_named
    def collect(self, work_dir: str | os.PathLike[str]) -> list[Collected]:
        """Store the units of ``work_dir`` that workers of a detached :meth:`evaluate` have finished, into this
        store (as ``ood-store collect``; idempotent: units already stored are not stored again).

        Each unit is ingested in a commit of its own; the store's connection is closed meanwhile, so that
        other processes can read between commits.

        Returns
        -------
        list of Collected
            One per unit stored now (or refused: ``status`` ``rejected``, with the ``reason``).
        """
        from ood_store._evaluate.collect import collect
        from ood_store._evaluate.workdir import WorkDir

        self._require_writable("collect")
        work = WorkDir(work_dir).require()
        with released(self):
            return collect(work, store=self.path, lock_timeout=self.lock_timeout)

    @damage_named
    def set_run_attributes(
        self,
        run: str | None = None,
        attributes: Mapping[str, Any] | Sequence[str] | None = None,
        *,
        match: str | None = None,
        attribute_file: str | os.PathLike[str] | None = None,
    ) -> list[str]:
        """Set attributes (family, size, in_domain, seed, or any key) of existing runs, in one transaction.

        Parameters
        ----------
        run
            A run name; or ``match``, a glob over run names (``"EleutherAI/*-160m"``).
        attributes
            A mapping or ``KEY=VALUE`` strings, for ``run`` or ``match``.
        attribute_file
            A CSV, TOML or YAML file of attributes by run name or glob, applied after ``attributes``.

        Returns
        -------
        list of str
            The runs changed. A run name or glob that matches no run is an
            error, and then nothing changes.
        """
        from ood_store._store.attribute_rules import apply_rules, read_attribute_file, rule

        self._require_writable("set run attributes")
        if run is not None and match is not None:
            raise InputError(None, None, "give a run or a glob (`match`), not both")
        rules = []
        pattern = match if match is not None else run
        if pattern is not None:
            rules.append(rule(pattern, attributes or {}))
        elif attributes:
            raise InputError(None, None, "which runs? give a run or a glob (`match`) for the attributes")
        if attribute_file is not None:
            rules.extend(read_attribute_file(attribute_file))
        if not rules:
            raise InputError(None, None, "nothing to set: give a run and attributes, or `attribute_file`")
        if run is not None and match is None:  # a run name is never read as a glob
            rules[0] = replace(rules[0], exact=True)
        return apply_rules(connection(self), rules, self.runs()["run"].to_list())

    # -- moving results between stores -------------------------------------
    @damage_named
    def dump(self, folder: str | os.PathLike[str], *, progress: bool = False) -> DumpReport:
        """Write every table as Parquet (partitioned by run where rows belong to evaluations) with a
        manifest, into a new folder."""
        from ood_store._store.dump import dump

        return dump(connection(self), folder, progress=progress)

    @damage_named
    def load(self, folder: str | os.PathLike[str], *, prefer: str | None = None, progress: bool = False) -> MergeReport:
        """Add a dump (:meth:`dump`, of any schema version) to this store.

        Evaluations already here (same content hash) are not added twice; conflicting run
        attributes are reported and this store's kept, unless ``prefer`` is ``"theirs"`` or ``"ours"``.
        """
        from ood_store._store.merge import load_dump

        self._require_writable("load a dump")
        return load_dump(connection(self), self.path, folder, prefer=prefer, progress=progress)

    @damage_named
    def merge(self, other: str | os.PathLike[str], *, prefer: str | None = None) -> MergeReport:
        """Add every result of another store file (opened read-only) to this one; the rules of :meth:`load`."""
        from ood_store._store.merge import merge

        self._require_writable("merge a store")
        return merge(connection(self), self.path, other, prefer=prefer)

    @damage_named
    def export_eee(
        self,
        folder: str | os.PathLike[str],
        *,
        runs: Sequence[str] | None = None,
        source: EeeSource | None = None,
    ) -> EeeExport:
        """Write every evaluation (of ``runs``) as an Every Eval Ever file, checked against EEE's schema."""
        from ood_store._export.eee import export_eee

        return export_eee(self, folder, runs=runs, source=source)

    # -- saved analyses ----------------------------------------------------
    @damage_named
    @damage_named
    def snapshots(self) -> pl.DataFrame:
        """One row per snapshot of a lake, oldest first: when it was committed (UTC), by whom, the command,
        and what it wrote (files, runs, rows). A snapshot's id is what ``at`` (``--at``) opens again.

        A store file keeps no history: it has no snapshots (:meth:`snapshot_marker` names its content)."""
        if self.lake is None:
            raise StoreError(f"{self.path}: a store file keeps no snapshots; a lake (ducklake:...) does")
        from ood_store._store import lake

        schema = {"snapshot": pl.Int64, "committed": pl.String, "author": pl.String, "command": pl.String,
                  "files": pl.Int64, "runs": pl.Int64, "rows": pl.Int64}  # fmt: skip
        rows = [{key: row[key] for key in schema} for row in lake.snapshots(connection(self))]
        return pl.DataFrame(rows, schema=schema, orient="row")

    def vacuum(self, older_than_days: float = 30.0, *, keep: Sequence[int] = (), dry_run: bool = False) -> VacuumReport:
        """Expire a lake's snapshots older than ``older_than_days`` and delete the data files no snapshot names
        (those that only expired snapshots named, and those of writers killed before they committed).

        The latest snapshot, those in ``keep`` and those saved analyses were computed at are kept: ``at``
        opens them as before. ``dry_run`` says what would be expired and changes nothing."""
        self._require_writable("vacuum it")
        if self.lake is None:
            raise StoreError(f"{self.path}: a store file keeps no snapshots to expire; vacuum is for a lake")
        from ood_store._store import lake

        if older_than_days < 0:
            raise InputError(None, None, "older_than_days must be 0 or more", parameter="older_than_days")
        return lake.vacuum(connection(self), older_than_days, keep=keep, dry_run=dry_run)

    def save_analysis(self, name: str, result: PartialCorrelations, *, replace: bool = False) -> None:
        """Save ``result`` (of :func:`ood_store.partial_correlations`) as analysis ``name``.

        The parameters saved with it (every option, the tasks and runs analyzed) come from the result
        itself; ``replace`` overwrites an analysis of that name.
        """
        from ood_store._analysis.results import PartialCorrelations, saved_rows
        from ood_store._store import saved

        self._require_writable("save an analysis")
        if not isinstance(result, PartialCorrelations):
            raise AnalysisError(
                f"expected the result of partial_correlations, got {type(result).__name__}", parameter="result"
            )
        saved.save(connection(self), name, saved_rows(result), result.params, replace=replace)

    @damage_named
    def analysis(self, name: str) -> PartialCorrelations:
        """Saved analysis ``name``, as the result it was saved from (``.table``, ``.options``, ...)."""
        from ood_store._analysis.saved import saved_analysis

        return saved_analysis(self, name)

    @damage_named
    def analysis_params(self, name: str) -> dict[str, Any]:
        """The parameters saved analysis ``name`` was computed with."""
        from ood_store._store import saved

        return saved.params(connection(self), name)

    @damage_named
    def analyses(self) -> pl.DataFrame:
        """One row per saved analysis, newest first."""
        from ood_store._store import saved

        return saved.listing(connection(self))

    @damage_named
    def drop_analysis(self, name: str) -> None:
        """Remove saved analysis ``name``."""
        from ood_store._store import saved

        self._require_writable("drop an analysis")
        saved.drop(connection(self), name)

    def __enter__(self) -> Store:
        return self
