"""Where an exported table or figure came from: written into every file ood-store exports.

A figure in a paper can then be traced back to the store, the analysis and the
parameters (or the SQL) that made it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from ood_store import __version__
from ood_store._store import saved
from ood_store._store.database import connection

if TYPE_CHECKING:
    from ood_store._store import Database


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


@dataclass(frozen=True)
class Provenance:
    """The source of an exported file.

    Attributes
    ----------
    source : str
        What was exported, in words: ``analysis pythia-gam``, ``compare of
        analysis pythia-gam``, ``query``, ``training curves of run R``.
    store : str or None
        The store's path.
    analysis : str or None
        The saved analysis' name.
    params : dict or None
        The parameters the analysis was computed with (``ood-store analyses``
        shows the same).
    sql : str or None
        The query, for exports of a SQL query's rows.
    snapshot : int or str or None
        What the store held: a lake's snapshot id (``ood-store export --at`` remakes the file from it),
        or a store file's content hash (``content:<md5>``); for an analysis, as it was when computed.
    version : str
        The ood-store version that wrote the file.
    created : str
        When the file was written (UTC, ISO 8601); from a lake, when the snapshot it was read at was
        committed, so that the file made again ``--at`` that snapshot is the same byte for byte.
    """

    source: str
    store: str | None = None
    analysis: str | None = None
    params: dict[str, Any] | None = None
    sql: str | None = None
    snapshot: int | str | None = None
    version: str = __version__
    created: str = field(default_factory=_now)

    @classmethod
    def of_analysis(cls, store: Database, name: str, *, source: str | None = None) -> Provenance:
        """The provenance of saved analysis ``name`` in ``store``."""
        params = saved.params(connection(store), name)
        return cls(
            source=source or f"analysis {name}",
            store=store.location,
            analysis=name,
            params=params,
            snapshot=params.get("store_snapshot"),
            # a lake's: when the snapshot it was computed at was committed; the same file whenever it is made
            created=_analysis_time(store, params.get("store_snapshot")),
        )

    @classmethod
    def of_query(cls, store: Database, sql: str) -> Provenance:
        """The provenance of the rows of ``sql`` run on ``store``."""
        return cls(
            source="query",
            store=store.location,
            sql=sql,
            snapshot=store.snapshot_marker(),
            created=store.snapshot_time() or _now(),
        )

    @classmethod
    def of_store(cls, store: Database, source: str, *, params: dict[str, Any] | None = None) -> Provenance:
        """The provenance of something drawn from ``store`` directly, with the ``params`` that chose it."""
        return cls(
            source=source,
            store=store.location,
            params=params,
            snapshot=store.snapshot_marker(),
            created=store.snapshot_time() or _now(),
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, ``ood_store_version`` first."""
        items = {
            "ood_store_version": self.version,
            "source": self.source,
            "store": self.store,
            "analysis": self.analysis,
            "params": self.params,
            "sql": self.sql,
            "snapshot": self.snapshot,
            "created": self.created,
        }
        return {key: value for key, value in items.items() if value is not None}

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON."""
        return orjson.dumps(self.to_dict(), default=str).decode()

    def lines(self) -> list[str]:
        """``key: value`` lines for a comment block; parameters and SQL as one line of JSON each."""
        out = []
        for key, value in self.to_dict().items():
            if isinstance(value, dict):
                value = orjson.dumps(value, default=str).decode()
            out.append(f"{key}: {' '.join(str(value).split())}")
        return ["Made by ood-store; provenance:", *out]

    def title(self) -> str:
        """A short title for file metadata."""
        return f"ood-store: {self.source}"


def _analysis_time(store: Database, snapshot: Any) -> str:
    if isinstance(snapshot, int) and not isinstance(snapshot, bool):
        return store.snapshot_time(snapshot) or store.snapshot_time() or _now()
    return store.snapshot_time() or _now()
