"""Saved analyses as results objects: the store keeps rows and parameters, this makes them a result again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ood_store._analysis.results import PartialCorrelations
from ood_store._store import saved
from ood_store._store.database import connection

if TYPE_CHECKING:
    from ood_store._store import Database


def saved_analysis(db: Database, name: str) -> PartialCorrelations:
    """Saved analysis ``name`` as the result it was saved from; an unknown name is an ``AnalysisError``."""
    table, params = saved.read_analysis(connection(db), name)
    return PartialCorrelations.from_saved(table, params, db)
