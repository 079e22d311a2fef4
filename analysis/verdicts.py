"""The verdict on a pair of OOD tasks across runs, from the numbers shown beside it.

A verdict never contradicts the sign agreement and the pooled interval in the
same row. With ``sign_agreement`` the fraction of runs whose r has the sign
of the pooled r (:func:`sign_agreement`), and ``agreement`` the threshold
(default 0.8):

1. **model-dependent**: some runs are significantly positive and others
   significantly negative, or the heterogeneity test (Cochran's Q) is
   significant while fewer than ``agreement`` of the runs share a sign;
2. **consistently positive** / **consistently negative**: the pooled interval
   excludes 0, at least ``agreement`` of the runs share the pooled sign, and
   no run is significant in the other direction;
3. **mixed**: the pooled interval excludes 0, but fewer than ``agreement`` of
   the runs share its sign (or one is significantly against it);
4. **no evidence**: the pooled interval includes 0;

and **too few runs** with fewer than two runs to pool. Runs count as
significant by their adjusted p-value at ``alpha`` (adjusted within each run). Over items and runs
(:mod:`~ood_store._analysis.crossed`) the sign agreement is that of the runs' calibrated estimates and a run
counts as significant after an adjustment over the row's runs too (:func:`~ood_store._analysis.compare.compare`).

**Adjusted over pairs.** A comparison makes two tests per pair (Q, and the
pooled estimate), and a study reports many pairs: tested at ``alpha`` each,
a study of 27 pairs without any real difference would be given one or two
verdicts of noise. :func:`~ood_store._analysis.compare.compare` therefore
adjusts both tests of every row in one family (``adjust_pairs``: Holm by
default, or Benjamini–Hochberg), and the verdict reads the adjusted Q p-value
and the adjusted pooled interval, which excludes 0 exactly when the adjusted
pooled p is below ``alpha`` (:func:`~ood_store._analysis.inference.adjusted_level`).

**Between groups.** :func:`between_verdict` says whether a pair's correlation
differs between groups of runs (models) beyond the variation within them
(seeds), or that it cannot say: with one run in a group the group's model and
its seed are confounded.
"""

from __future__ import annotations

import math

AGREEMENT = 0.8

VERDICTS = (
    "consistently positive",
    "consistently negative",
    "model-dependent",
    "mixed",
    "no evidence",
    "not distinguishable from the control's noise",
    "too few runs",
)


def verdict(
    *,
    n_positive: int,
    n_negative: int,
    runs: int,
    n_sig_positive: int,
    n_sig_negative: int,
    estimate: float | None,
    ci_low: float | None,
    ci_high: float | None,
    q_p: float | None,
    alpha: float = 0.05,
    agreement: float = AGREEMENT,
    share: float | None = None,
) -> str:
    """The verdict for one pair (see the module's docstring for the rule); ``share``: the sign agreement, when it
    is not the runs' own (:func:`sign_agreement` of the counts), as over items and runs.

    Examples
    --------
    19 of 20 runs positive, one slightly negative but not significant, a
    clearly positive pooled r and significant heterogeneity:

    >>> verdict(n_positive=19, n_negative=1, runs=20, n_sig_positive=6, n_sig_negative=0,
    ...         estimate=0.40, ci_low=0.30, ci_high=0.49, q_p=1e-5)
    'consistently positive'

    11 of 20 negative, a pooled interval just below 0:

    >>> verdict(n_positive=9, n_negative=11, runs=20, n_sig_positive=0, n_sig_negative=0,
    ...         estimate=-0.10, ci_low=-0.19, ci_high=-0.01, q_p=0.7)
    'mixed'
    """
    if estimate is None or ci_low is None or ci_high is None or math.isnan(estimate) or runs < 2:
        return "too few runs"
    if share is None or math.isnan(share):
        share = sign_agreement(n_positive, n_negative, runs, estimate)
    heterogeneous = q_p is not None and q_p < alpha
    if (n_sig_positive and n_sig_negative) or (heterogeneous and share < agreement):
        return "model-dependent"
    if ci_low <= 0 <= ci_high:
        return "no evidence"
    sign = 1 if ci_low > 0 else -1  # the estimate's sign too: it lies inside its interval
    against = n_sig_negative if sign > 0 else n_sig_positive
    if share >= agreement and not against:
        return "consistently positive" if sign > 0 else "consistently negative"
    return "mixed"


def sign_agreement(n_positive: int, n_negative: int, runs: int, estimate: float | None) -> float:
    """The share of runs whose r has the sign of the pooled ``estimate`` (the majority's sign without one).

    Examples
    --------
    >>> sign_agreement(9, 11, 20, -0.1), sign_agreement(9, 11, 20, None)
    (0.55, 0.55)
    """
    if not runs:
        return math.nan
    if estimate is None or math.isnan(estimate) or estimate == 0:
        return max(n_positive, n_negative) / runs
    return (n_positive if estimate > 0 else n_negative) / runs


def between_verdict(
    between: str,
    within: str,
    *,
    groups: int,
    fewest: int | None,
    p: float | None,
    alpha: float = 0.05,
    minimum: int = 2,
) -> str:
    """The verdict of a test between ``groups`` groups whose smallest has ``fewest`` runs, p-value ``p`` (adjusted).

    Examples
    --------
    >>> between_verdict("family", "seed", groups=4, fewest=3, p=0.001)
    'differs by family beyond seed variation'
    >>> between_verdict("family", "seed", groups=4, fewest=1, p=None)
    'family and seed confounded: 1 seed per family'
    """
    if groups < 2 or fewest is None:
        return "too few runs"
    if fewest < minimum:
        return f"{between} and {within} confounded: {fewest} {within} per {between}"
    if p is None or math.isnan(p):
        return "too few runs"
    if p < alpha:
        return f"differs by {between} beyond {within} variation"
    return f"not shown to differ by {between} beyond {within} variation"
