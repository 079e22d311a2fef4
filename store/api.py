"""The Store: one DuckDB file holding every score of every run.

>>> import ood_store
>>> with ood_store.open("results.duckdb") as store:          # doctest: +SKIP
...     store.ingest(["lm-eval-outputs/"])
...     store.query("SELECT * FROM scores WHERE task = $task", task="hellaswag")
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import duckdb
import polars as pl

from ood_store import _schema as schema
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError, StoreError, StoreLockedError
from ood_store._store import query, sandbox
from ood_store._store.connection import DEFAULT_LOCK_TIMEOUT, connect, fetch_value
from ood_store._store.damage import damaged

if TYPE_CHECKING:
    from ood_store._analysis.results import PartialCorrelations
    from ood_store._evaluate.options import EvaluateOptions
    from ood_store._evaluate.runner import EvaluateReport
    from ood_store._export.eee import EeeExport, EeeSource
    from ood_store._ingest import IngestReport, Overrides
    from ood_store._store.dump import DumpReport
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
) -> Store:
    """Open (and, unless ``read_only``, create or migrate) the store at ``path``.

    Parameters
    ----------
    path
        The DuckDB file. Defaults to ``$OOD_STORE_DB``, else ``ood_store.duckdb``.
    read_only
        Open without taking the write lock. The store must exist and be at the
        current schema version. Another process writing the file still blocks
        a read-only open (a DuckDB rule), up to ``lock_timeout``.
    lock_timeout
        Seconds to wait for another process that holds the store.
    allow_files
        Folders whose files SQL run by :meth:`Store.query` may read (``read_csv('DIR/x.csv')``);
        by default it can read the store and nothing else.
    """
    return Store(Path(path) if path is not None else default_path(), read_only, lock_timeout, allow_files)


class Store:
    """A results store. Create it with :func:`ood_store.open`."""

    def __init__(
        self, path: Path, read_only: bool, lock_timeout: float, allow_files: Iterable[str | os.PathLike[str]] = ()
    ):
        self.path = path
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self.allow_files = sandbox.folders(allow_files)
        self._created = not read_only and not path.exists()
        self._discard_if_empty = False  # set by an ingest or evaluate that added nothing to the store it created
        self._user_sql = ExitStack()  # holds the sandbox of a read-only store between queries
        self._closed = False
        self._sandbox_con: duckdb.DuckDBPyConnection | None = None
        # The store's own connection; None while another process holds the store after _released.
        self._live: duckdb.DuckDBPyConnection | None = connect(path, read_only=read_only, lock_timeout=lock_timeout)
        try:
            self.migrations_applied = self._prepare()
        except BaseException as exc:
            self._con.close()
            problem = damaged(path, exc)  # the schema's tables are the first thing read
            if problem is not None:
                raise problem from None
            raise

    # -- lifecycle ---------------------------------------------------------
    def _prepare(self) -> list[int]:
        version = schema.current_version(self._con)
        schema.check_supported(version, str(self.path))
        if version == 0 and self._has_foreign_tables():
            raise StoreError(f"{self.path}: a DuckDB database, but not an ood-store (no schema_version table)")
        if self.read_only:
            if version < schema.latest_version():
                raise StoreError(
                    f"{self.path}: the store has schema version {version} and needs migrating to "
                    f"{schema.latest_version()}; run `ood-store init` (it keeps all data)"
                )
            return []
        return schema.migrate(self._con, str(self.path))

    def _has_foreign_tables(self) -> bool:
        return bool(fetch_value(self._con, sqlfiles.load("ood_store._store", "count_tables")))

    def close(self) -> None:
        """Close the store. A store this object created for an ingest that added nothing, or for an
        evaluation that stopped before storing anything, is removed."""
        discard = self._discard_if_empty and self._live is not None and self._holds_nothing()
        self._closed = True
        self._user_sql.close()
        if self._live is not None:
            self._live.close()
        if discard:
            for leftover in (self.path, self.path.with_name(self.path.name + ".wal")):
                leftover.unlink(missing_ok=True)

    @contextmanager
    def _released(self) -> Iterator[None]:
        """Close the connection for the block (other processes may open the store), then open it again.

        For :meth:`evaluate`, whose collector opens the store for each commit only, and for
        :meth:`query` on a store opened for writing, whose sandbox attaches the file read-only.
        """
        self._con.close()
        self._live = None
        try:
            yield
        finally:
            # Another process may have taken the store meanwhile: what the block did stands, and the
            # store is opened again when next used (the _con property), waiting for that process then.
            with suppress(StoreLockedError):
                self._live = connect(self.path, read_only=self.read_only, lock_timeout=self.lock_timeout)

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        """The store's own connection, opened again (waiting up to ``lock_timeout``) if another process
        took the store while it was released."""
        if self._live is None:
            if self._closed:
                raise StoreError(f"{self.path}: the store is closed")
            self._live = connect(self.path, read_only=self.read_only, lock_timeout=self.lock_timeout)
        return self._live

    def _holds_nothing(self) -> bool:
        try:
            return not fetch_value(self._con, sqlfiles.load("ood_store._store", "count_rows"))
        except duckdb.Error:
            return False

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"<ood_store.Store {str(self.path)!r} {mode}>"

    @property
    def schema_version(self) -> int:
        return schema.current_version(self._con)

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection, for advanced use; prefer :meth:`query`.

        Not a sandbox: SQL run on it can change the store. On a store opened for writing,
        :meth:`query` and :meth:`evaluate` close it and open a new one: take it again after them.
        """
        return self._con

    # -- reading -----------------------------------------------------------
    def query(self, sql: str, /, **params: Any) -> pl.DataFrame:
        """Run one read-only SQL statement and return its rows as a Polars DataFrame.

        Named parameters are written ``$name`` in the SQL and passed as keywords:

        >>> store.query("SELECT * FROM scores WHERE run = $run", run="r1")  # doctest: +SKIP

        The statement runs in a sandbox (:mod:`ood_store._store.sandbox`): a connection of its own on
        which the store is attached read-only, no other file can be read or written (but those in the
        folders of ``allow_files``) and no setting can be changed. Statements that would change the
        store (INSERT, CREATE, COPY, ATTACH, a DELETE inside a WITH, ``nextval()``, ...) are refused
        with a :class:`~ood_store._errors.QueryError`. On a store opened for writing, the store's own
        connection is closed while the query runs (DuckDB lets a process open a file read-only only
        when it does not have it open for writing), so other processes may take the store meanwhile;
        the query's rows come back all the same, and the store is opened again, waiting for them,
        when next used.
        """
        with self._sandbox() as con:
            return query.read_only(con, sql, params)

    @contextmanager
    def _sandbox(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The sandbox for one query: kept between queries on a read-only store (no process can change
        the file while this one reads it), a fresh one each time on a store opened for writing."""
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        with ExitStack() as stack:
            opened = sandbox.sandbox(self.path, allow_files=self.allow_files, lock_timeout=self.lock_timeout)
            if not self.read_only:
                stack.enter_context(self._released())
                con = stack.enter_context(opened)
            elif self._sandbox_con is None:
                con = self._sandbox_con = self._user_sql.enter_context(opened)
            else:
                con = self._sandbox_con
            with self._damage_named():
                yield con

    @contextmanager
    def _damage_named(self) -> Iterator[None]:
        """A block of the store that fails its checksum, met by a query, as the store's one-line error."""
        try:
            yield
        except duckdb.Error as exc:
            problem = damaged(self.path, exc)
            if problem is None:
                raise
            raise problem from None

    def _read(self, sql: str, /, **params: Any) -> pl.DataFrame:
        """The rows of ood-store's own SQL (a ``.sql`` file of the package) on the store's connection.

        Not checked and not in the sandbox: never for SQL that a user wrote (that is :meth:`query`).
        """
        with self._damage_named():
            return query.rows(self._con, sql, params)

    def runs(self) -> pl.DataFrame:
        """One row per run: attributes, checkpoints, steps, evaluations and tasks."""
        return self._read(sqlfiles.load("ood_store._store", "list_runs"))

    def tasks(self, run: str | None = None) -> pl.DataFrame:
        """One row per (task, metric, filter, num_fewshot) in ``scores``, optionally for one run."""
        return self._read(sqlfiles.load("ood_store._store", "list_tasks"), run=run)

    # -- writing -----------------------------------------------------------
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
        """Ingest results files (lm-eval, Every Eval Ever, inspect_ai, W&B history), folders or globs;
        see :func:`ood_store._ingest.ingest` (``dry_run``: check and plan, write nothing; a read-only
        store will do).

        ``campaign`` names the evaluation campaign of every file (default: the
        folder each file sits in); ``attribute_file`` is a CSV, TOML or YAML
        file of run attributes by run name or glob
        (:func:`~ood_store._store.attribute_rules.read_attribute_file`).
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
            self._con,
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
        if self._created and not report.ingested:
            self._discard_if_empty = True
        return report

    def evaluate(
        self,
        checkpoints: Iterable[str | os.PathLike[str]] = (),
        *,
        run: str | None = None,
        tasks: Sequence[str] = (),
        **options: Unpack[EvaluateOptions],
    ) -> EvaluateReport:
        """Evaluate checkpoints (or a study's runs) with lm-eval and store the results.

        The keywords are those of the runner (:class:`~ood_store._evaluate.options.EvaluateOptions`); see
        :func:`ood_store._evaluate.runner.evaluate`. While it runs, the store's connection is closed and
        opened for each commit only, so that other processes can read the store; it is open again when
        this returns.

        >>> store.evaluate(["runs/opt-mnli/"], run="opt-mnli", tasks=["ood_nli"])  # doctest: +SKIP
        >>> store.evaluate(study="study.toml", executor="slurm", slurm_partition="gpu")  # doctest: +SKIP
        """
        from ood_store._evaluate.runner import evaluate

        self._require_writable("evaluate")
        try:
            return evaluate(self, [str(c) for c in checkpoints], run=run, tasks=tasks, **options)
        except BaseException:
            self._discard_if_empty = self._created  # refused before anything was stored: leave no store file
            raise

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
            A CSV, TOML or YAML file of attributes by run name or glob
            (:func:`~ood_store._store.attribute_rules.read_attribute_file`), applied after ``attributes``.

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
        return apply_rules(self._con, rules, self.runs()["run"].to_list())

    # -- moving results between stores -------------------------------------
    def dump(self, folder: str | os.PathLike[str], *, progress: bool = False) -> DumpReport:
        """Write every table as Parquet (partitioned by run where rows belong to evaluations) with a
        manifest, into a new folder; see :func:`ood_store._store.dump.dump`."""
        from ood_store._store.dump import dump

        return dump(self._con, folder, progress=progress)

    def load(self, folder: str | os.PathLike[str], *, prefer: str | None = None, progress: bool = False) -> MergeReport:
        """Add a dump (:meth:`dump`, any schema version) to this store; see :mod:`ood_store._store.merge`.

        Evaluations already here (same content hash) are not added twice; conflicting run
        attributes are reported and this store's kept, unless ``prefer`` is ``"theirs"`` or ``"ours"``.
        """
        from ood_store._store.merge import load

        self._require_writable("load a dump")
        return load(self._con, self.path, folder, prefer=prefer, progress=progress)

    def merge(self, other: str | os.PathLike[str], *, prefer: str | None = None) -> MergeReport:
        """Add every result of another store file (opened read-only) to this one; the rules of :meth:`load`."""
        from ood_store._store.merge import merge

        self._require_writable("merge a store")
        return merge(self._con, self.path, other, prefer=prefer)

    def export_eee(
        self,
        folder: str | os.PathLike[str],
        *,
        runs: Sequence[str] | None = None,
        source: EeeSource | None = None,
    ) -> EeeExport:
        """Write every evaluation (of ``runs``) as an Every Eval Ever file.

        See :func:`ood_store._export.eee.export_eee`."""
        from ood_store._export.eee import export_eee

        return export_eee(self, folder, runs=runs, source=source)

    # -- saved analyses ----------------------------------------------------
    def save_analysis(self, name: str, result: PartialCorrelations, *, replace: bool = False) -> None:
        """Save ``result`` (of :func:`~ood_store._analysis.partial_correlations`) as analysis ``name``.

        The parameters saved with it (every option, the tasks and runs analysed)
        come from the result itself.
        """
        from ood_store._store import saved

        self._require_writable("save an analysis")
        saved.save(self._con, name, result, replace=replace)

    def analysis(self, name: str) -> PartialCorrelations:
        """Saved analysis ``name``, as the result it was saved from (``.table``, ``.options``, ...)."""
        from ood_store._store import saved

        return saved.load(self._con, name)

    def analysis_params(self, name: str) -> dict[str, Any]:
        """The parameters saved analysis ``name`` was computed with."""
        from ood_store._store import saved

        return saved.params(self._con, name)

    def analyses(self) -> pl.DataFrame:
        """One row per saved analysis, newest first."""
        from ood_store._store import saved

        return saved.listing(self._con)

    def drop_analysis(self, name: str) -> None:
        """Remove saved analysis ``name``."""
        from ood_store._store import saved

        self._require_writable("drop an analysis")
        saved.drop(self._con, name)

    def _require_writable(self, what: str) -> None:
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only; cannot {what}")
