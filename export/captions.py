"""What every table caption and figure note says about the analysis: what was regressed out, how, and the test.

A number in a paper is only readable with its method beside it: the in-domain
task that was controlled for, the residualizer (a straight line or a GAM), the
correlation (Pearson or Spearman) and which p-values mark significance
(autocorrelation-aware ``p_eff_adj`` or naive ``p_adj``, and their adjustment).

Examples
--------
>>> import polars as pl
>>> rows = pl.DataFrame({"in_domain": ["mnli"], "residualizer": ["gam"], "method": ["pearson"]})
>>> method = Method.of(rows)
>>> method.regressed_out({"mnli": "MNLI"})
'in-domain MNLI regressed out (GAM residualizer, Pearson)'
>>> method.test("effective")
'p_eff_adj: effective n of autocorrelated checkpoints'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from ood_store._analysis.results import Comparison, PartialCorrelations

_RESIDUALIZER = {"gam": "GAM"}
_ADJUST = {"holm": "Holm", "fdr_bh": "Benjamini–Hochberg", "bonferroni": "Bonferroni"}
_P = {"effective": "p_eff_adj", "naive": "p_adj"}
_INFERENCE = {"effective": "effective n of autocorrelated checkpoints", "naive": "naive n, checkpoints as independent"}


@dataclass(frozen=True)
class Method:
    """How an analysis was computed, as far as its rows (and options, for a result) say."""

    in_domain: str | None = None
    residualizer: str | None = None
    method: str | None = None
    adjust: str | None = None

    @classmethod
    def of(cls, source: PartialCorrelations | Comparison | pl.DataFrame | None) -> Method:
        """The method of a result, a comparison of one, or a partial-correlation frame (from its columns)."""
        if isinstance(source, Comparison):
            source = source.source
        if source is None:
            return cls()
        table = source.table if isinstance(source, PartialCorrelations) else source
        adjust = source.options.adjust if isinstance(source, PartialCorrelations) else None

        def one(column: str) -> str | None:
            values = table[column].drop_nulls().unique().to_list() if column in table.columns else []
            return str(values[0]) if len(values) == 1 else None

        return cls(one("in_domain"), one("residualizer"), one("method"), adjust)

    def regressed_out(self, names: Mapping[str, str] | None = None) -> str:
        """``in-domain MNLI regressed out (GAM residualizer, Pearson)``, as far as it is known."""
        names = names or {}
        text = f"in-domain {names.get(self.in_domain, self.in_domain)} regressed out" if self.in_domain else ""
        details = []
        if self.residualizer:
            details.append(f"{_RESIDUALIZER.get(self.residualizer, self.residualizer)} residualizer")
        if self.method:
            details.append(self.method.capitalize())
        if details:
            text = f"{text} ({', '.join(details)})" if text else ", ".join(details)
        return text

    def test(self, inference: str) -> str:
        """Which p marks significance and what it assumes: ``p_eff_adj: effective n ..., Holm-adjusted``."""
        adjusted = f", {adjusted_within(self.adjust, 'run')}" if self.adjust in _ADJUST else ""
        return f"{_P[inference]}: {_INFERENCE[inference]}{adjusted}"


def adjusted_within(adjust: str, scope: str) -> str:
    """How p-values were adjusted for multiple testing, and over what: ``Holm-adjusted within each panel``.

    >>> adjusted_within("fdr_bh", "run")
    'Benjamini–Hochberg-adjusted within each run'
    >>> adjusted_within("none", "panel")
    'not adjusted for multiple testing'
    """
    if adjust not in _ADJUST:
        return "not adjusted for multiple testing"
    return f"{_ADJUST[adjust]}-adjusted within each {scope}"


def adjusted_over_pairs(adjust_pairs: str, test: str) -> str:
    """How a comparison's pooled p-values were tested and adjusted: ``Knapp–Hartung; Holm-adjusted over pairs``.

    The family is the comparison's: every pair's (and group's) heterogeneity and pooled tests.

    >>> adjusted_over_pairs("holm", "knha")
    'Knapp–Hartung t; Holm-adjusted over every pair, with the heterogeneity tests'
    >>> adjusted_over_pairs("none", "z")
    'z test; not adjusted for multiple testing'
    >>> adjusted_over_pairs("holm", "crossed")  # verdicts over items and runs
    't on the crossed variance; Holm-adjusted over every pair, with the heterogeneity tests'
    """
    tested = {"knha": "Knapp–Hartung t", "z": "z test", "crossed": "t on the crossed variance"}[test]
    if adjust_pairs not in _ADJUST:
        return f"{tested}; not adjusted for multiple testing"
    return f"{tested}; {_ADJUST[adjust_pairs]}-adjusted over every pair, with the heterogeneity tests"


def p_column(inference: str) -> str:
    """The adjusted p-value column that ``inference`` tests with."""
    return _P[inference]
