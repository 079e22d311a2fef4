"""Comparing partial correlations across runs: pooling against hand computations, verdicts on planted data."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from ood_store._analysis import compare, partial_correlations
from ood_store._errors import AnalysisError


def _table(rows: list[tuple[str, float, int]], pair=("hans", "rte"), p_adj=None) -> pl.DataFrame:
    """A hand-made partial-correlation table: (run, r, n) per row, linear fits (edf 2)."""
    n = [row[2] for row in rows]
    return pl.DataFrame(
        {
            "run": [row[0] for row in rows],
            "task_x": [pair[0]] * len(rows),
            "task_y": [pair[1]] * len(rows),
            "n": n,
            "r": [row[1] for row in rows],
            "n_eff": [float(v) for v in n],
            "p_adj": p_adj if p_adj is not None else [1.0] * len(rows),
            "p_eff_adj": p_adj if p_adj is not None else [1.0] * len(rows),
            "edf_x": [2.0] * len(rows),
            "edf_y": [2.0] * len(rows),
        }
    )


def test_pooled_r_equals_a_hand_computed_dersimonian_laird_when_homogeneous():
    rows = [("a", 0.30, 54), ("b", 0.32, 104), ("c", 0.28, 204)]
    out = compare(_table(rows), inference="naive", test="z").table.row(0, named=True)
    z = np.arctanh([0.30, 0.32, 0.28])
    v = 1 / (np.array([54, 104, 204]) - 4)  # n - k - 3 with k = 1
    w = 1 / v
    fixed = (w * z).sum() / w.sum()
    q = (w * (z - fixed) ** 2).sum()
    assert out["q"] == pytest.approx(q, rel=1e-9)
    assert out["q_p"] == pytest.approx(stats.chi2.sf(q, 2), rel=1e-9)
    assert q < 2  # homogeneous: tau^2 = 0 and the random-effects mean is the fixed-effect mean
    assert out["tau2"] == pytest.approx(0.0, abs=1e-12)
    assert out["i2"] == 0.0
    assert out["r_pooled"] == pytest.approx(np.tanh(fixed), rel=1e-9)
    se = np.sqrt(1 / w.sum())
    assert out["ci_low"] == pytest.approx(np.tanh(fixed - stats.norm.ppf(0.975) * se), rel=1e-9)
    assert out["ci_high"] == pytest.approx(np.tanh(fixed + stats.norm.ppf(0.975) * se), rel=1e-9)
    assert out["p_pooled"] == pytest.approx(2 * stats.norm.sf(fixed / se), rel=1e-6)
    assert out["verdict"] == "consistently positive"
    assert out["runs"] == 3 and out["n_positive"] == 3 and out["sign_agreement"] == 1.0
    assert [out["r:a"], out["r:b"], out["r:c"]] == [0.30, 0.32, 0.28]
    # Knapp-Hartung: the same estimate, its variance times s2w = sum w (z - mean)^2 / (k - 1), t with 2 df
    knha = compare(_table(rows), inference="naive", test="knha").table.row(0, named=True)
    s2w = (w * (z - fixed) ** 2).sum() / 2
    assert knha["r_pooled"] == pytest.approx(out["r_pooled"], rel=1e-12)
    half = stats.t.ppf(0.975, 2) * np.sqrt(s2w) * se
    assert knha["ci_low"] == pytest.approx(np.tanh(fixed - half), rel=1e-9)
    assert knha["p_pooled"] == pytest.approx(2 * stats.t.sf(fixed / (np.sqrt(s2w) * se), 2), rel=1e-6)


def test_heterogeneity_matches_cochran_q_and_i2():
    rows = [("a", 0.6, 80), ("b", -0.5, 80), ("c", 0.1, 80)]
    out = compare(_table(rows), inference="naive").table.row(0, named=True)
    z = np.arctanh([0.6, -0.5, 0.1])
    w = np.full(3, 80 - 4.0)
    q = (w * (z - (w * z).sum() / w.sum()) ** 2).sum()
    assert out["q"] == pytest.approx(q, rel=1e-9)
    assert out["i2"] == pytest.approx((q - 2) / q, rel=1e-9)
    assert out["tau2"] > 0
    assert out["verdict"] == "model-dependent"  # signs differ and Q is significant
    assert out["n_positive"] == 2 and out["n_negative"] == 1


def test_significant_runs_in_both_directions_are_model_dependent():
    rows = [("a", 0.4, 30), ("b", -0.4, 30)]
    out = compare(_table(rows, p_adj=[0.01, 0.02]), inference="naive").table.row(0, named=True)
    assert (out["n_sig_positive"], out["n_sig_negative"]) == (1, 1)
    assert out["verdict"] == "model-dependent"


def test_weak_mixed_evidence_is_no_evidence_and_one_run_is_too_few():
    out = compare(_table([("a", 0.05, 30), ("b", -0.03, 30)]), inference="naive").table.row(0, named=True)
    assert out["verdict"] == "no evidence"
    one = compare(_table([("a", 0.9, 30)])).table.row(0, named=True)
    assert one["verdict"] == "too few runs" and one["r_pooled"] is None


def test_effective_inference_uses_n_eff():
    table = _table([("a", 0.30, 54), ("b", 0.32, 104)]).with_columns(n_eff=pl.Series([10.0, 20.0]))
    naive = compare(table, inference="naive", test="z").table.row(0, named=True)
    effective = compare(table, inference="effective", test="z").table.row(0, named=True)
    assert effective["ci_high"] - effective["ci_low"] > naive["ci_high"] - naive["ci_low"]
    z = np.arctanh([0.30, 0.32])
    w = np.array([10 - 4.0, 20 - 4.0])
    assert effective["q"] == pytest.approx((w * (z - (w * z).sum() / w.sum()) ** 2).sum(), rel=1e-9)


def test_planted_model_dependence_is_found_across_simulated_runs():
    """Two families of six runs: in one the OOD residuals correlate at +0.7, in the other at -0.7."""
    rng = np.random.default_rng(0)
    frames, families = [], {}
    for i in range(12):
        rho = 0.7 if i < 6 else -0.7
        n = 60
        z = np.sort(rng.uniform(0.4, 0.9, n))
        e = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n) * 0.02
        noise = rng.normal(size=n) * 0.02
        run = f"run{i}"
        families[run] = "opt" if i < 6 else "olmo"
        values = {"mnli": z, "hans": z + e[:, 0], "rte": 1 - z + e[:, 1], "anli": 0.5 * z + noise}
        frames.append(
            pl.DataFrame(
                {
                    "run": run,
                    "step": np.tile(np.arange(n), 4),
                    "task": np.repeat(list(values), n),
                    "value": np.concatenate(list(values.values())),
                }
            )
        )
    table = partial_correlations(pl.concat(frames), in_domain="mnli").table
    overall = compare(table).table.filter((pl.col("task_x") == "hans") & (pl.col("task_y") == "rte")).row(0, named=True)
    assert overall["verdict"] == "model-dependent"
    attributes = pl.DataFrame({"run": list(families), "family": list(families.values())})
    grouped = compare(table, by=["family"], attributes=attributes).table.filter(
        (pl.col("task_x") == "hans") & (pl.col("task_y") == "rte")
    )
    verdicts = dict(zip(grouped["family"], grouped["verdict"], strict=True))
    assert verdicts == {"opt": "consistently positive", "olmo": "consistently negative"}

    # anli's residuals are independent noise: no verdict of consistency for its pairs
    noise = compare(table).table.filter(pl.col("task_x") == "anli")
    assert noise.height == 2
    assert set(noise["verdict"]) == {"no evidence"}


def test_bad_inputs():
    table = _table([("a", 0.3, 30), ("b", 0.2, 30)])
    with pytest.raises(AnalysisError, match="inference must be one of effective, naive"):
        compare(table, inference="bayes")
    with pytest.raises(AnalysisError, match="not a partial-correlation table"):
        compare(table.drop("n_eff"))
    with pytest.raises(AnalysisError, match="needs the store"):
        compare(table, by=["family"])
    with pytest.raises(AnalysisError, match="no run attribute 'size'"):
        compare(table, by=["size"], attributes=pl.DataFrame({"run": ["a", "b"], "family": ["x", "y"]}))


# -- verdicts: never against the sign agreement and the pooled interval shown beside them ---------------------

REFERENCE = Path(__file__).parent / "reference"


def _reference_set(name: str) -> tuple[pl.DataFrame, dict]:
    """A 20-run set of tests/reference/meta_input.csv as a partial-correlation table, and metafor's pooling of it."""
    rows = pl.read_csv(REFERENCE / "meta_input.csv").filter(pl.col("set") == name)
    table = pl.DataFrame(
        {
            "run": rows["run"],
            "task_x": rows["task_x"],
            "task_y": rows["task_y"],
            "n": rows["n"],
            "r": rows["r"],
            "n_eff": rows["n_eff"].cast(pl.Float64),
            "p_adj": rows["p_eff"],  # one pair per run: adjusted = unadjusted
            "p_eff_adj": rows["p_eff"],
            "edf_x": [2.0] * rows.height,
            "edf_y": [2.0] * rows.height,
        }
    )
    metafor = pl.read_csv(REFERENCE / "meta.csv").filter(pl.col("set") == name).row(0, named=True)
    return table, metafor


def test_nineteen_of_twenty_agreeing_with_a_clear_pooled_r_is_consistent():
    """Issue 11: 19 of 20 runs positive, one non-significantly negative, pooled r 0.40 (p < 0.001), Q
    significant. The old rule called it model-dependent; the runs and the pooled interval say consistent."""
    table, metafor = _reference_set("agree19")
    out = compare(table, test="z").table.row(0, named=True)
    assert (out["runs"], out["n_positive"], out["n_negative"], out["n_sig_negative"]) == (20, 19, 1, 0)
    assert out["sign_agreement"] == 0.95
    assert out["r_pooled"] == pytest.approx(np.tanh(metafor["estimate"]), abs=1e-6)
    assert out["ci_low"] == pytest.approx(np.tanh(metafor["ci_low"]), abs=1e-6) and out["ci_low"] > 0
    assert out["p_pooled"] < 0.001 and out["q_p"] == pytest.approx(metafor["QEp"], abs=1e-6) and out["q_p"] < 0.05
    assert out["verdict"] == "consistently positive"


def test_eleven_of_twenty_is_not_consistent_whatever_the_pooled_interval():
    """Issue 11: 11 of 20 negative (none significant), a pooled interval just below 0, Q not significant.
    The old rule said consistently negative; with 55% sign agreement the verdict is mixed."""
    table, metafor = _reference_set("split11")
    out = compare(table, test="z", adjust_pairs="none").table.row(0, named=True)
    assert (out["n_positive"], out["n_negative"], out["n_sig_positive"], out["n_sig_negative"]) == (9, 11, 0, 0)
    assert out["sign_agreement"] == 0.55
    assert out["ci_high"] == pytest.approx(np.tanh(metafor["ci_high"]), abs=1e-6) and out["ci_high"] < 0
    assert out["q_p"] > 0.05
    assert out["verdict"] == "mixed"
    # the threshold is a parameter: at 55% it would be consistent, with a pooled interval through 0 no evidence
    unadjusted = {"test": "z", "adjust_pairs": "none"}
    assert compare(table, agreement=0.55, **unadjusted).table.row(0, named=True)["verdict"] == "consistently negative"
    weaker = table.with_columns(pl.col("r") * 0.5)
    assert compare(weaker, **unadjusted).table.row(0, named=True)["verdict"] == "no evidence"
    with pytest.raises(AnalysisError, match="agreement: must be more than 0.5 and at most 1"):
        compare(table, agreement=0.5)
    # Holm over the row's two tests doubles the pooled p (0.024, the smaller) to 0.048, still below 0.05; it stops
    # at Q's (0.70), so the adjusted interval is the one at 0.05 / (2 - 1): the unadjusted one
    adjusted = compare(table, test="z").table.row(0, named=True)
    assert adjusted["p_pooled_adj"] == pytest.approx(2 * adjusted["p_pooled"], rel=1e-12)
    assert adjusted["p_pooled_adj"] < 0.05
    assert adjusted["q_p_adj"] == adjusted["q_p"] > 0.05
    assert (adjusted["ci_low_adj"], adjusted["ci_high_adj"]) == (adjusted["ci_low"], adjusted["ci_high"])
    assert adjusted["verdict"] == "mixed"


@pytest.mark.parametrize(("test", "adjust_pairs"), [("z", "none"), ("knha", "holm"), ("z", "fdr_bh")])
def test_verdicts_never_contradict_the_numbers_beside_them(test, adjust_pairs):
    """400 random comparisons of 1 to 6 pairs of 2 to 25 runs: each label holds by its definition on the row's own
    adjusted columns, and the adjusted interval excludes 0 exactly where the adjusted pooled p is below alpha."""
    rng = np.random.default_rng(11)
    seen = set()
    for trial in range(400):
        pairs = int(rng.integers(1, 7))
        k = int(rng.integers(2, 26))
        frames = []
        for pair in range(pairs):
            mean, spread = rng.normal(0, 0.3), rng.uniform(0, 0.5)
            r = np.tanh(rng.normal(mean, spread, k)).round(3)
            n = rng.integers(15, 80, k)
            p = stats.t.sf(np.abs(r) * np.sqrt((n - 3) / (1 - r**2)), n - 3) * 2
            rows = [(f"run{i}", float(r[i]), int(n[i])) for i in range(k)]
            frames.append(_table(rows, pair=(f"x{pair}", "y"), p_adj=list(p)))
        agreement = float(rng.choice([0.6, 0.8, 1.0]))
        out = compare(pl.concat(frames), inference="naive", agreement=agreement, test=test, adjust_pairs=adjust_pairs)
        for row in out.table.iter_rows(named=True):
            verdict, share = row["verdict"], row["sign_agreement"]
            seen.add(verdict)
            excludes_zero = row["ci_low_adj"] > 0 or row["ci_high_adj"] < 0
            assert excludes_zero is (row["p_pooled_adj"] < 0.05), trial
            assert row["ci_low_adj"] <= row["ci_low"] and row["ci_high"] <= row["ci_high_adj"], trial
            assert share == (row["n_positive"] if row["r_pooled"] > 0 else row["n_negative"]) / row["runs"], trial
            if verdict.startswith("consistently"):
                positive = verdict == "consistently positive"
                assert (row["ci_low_adj"] > 0) if positive else (row["ci_high_adj"] < 0), trial
                assert share >= agreement, trial
                assert (row["n_sig_negative"] if positive else row["n_sig_positive"]) == 0, trial
            elif verdict == "model-dependent":
                both = row["n_sig_positive"] > 0 and row["n_sig_negative"] > 0
                assert both or (row["q_p_adj"] < 0.05 and share < agreement), trial
            elif verdict == "mixed":
                assert excludes_zero, trial
            else:
                assert verdict == "no evidence" and not excludes_zero, trial
    assert seen == {"consistently positive", "consistently negative", "model-dependent", "mixed", "no evidence"}


def test_the_signs_figure_and_the_compare_table_follow_the_verdict():
    """The figure of issue 11 printed '9+ 11−' in bold as consistent: it reads the verdict, now mixed."""
    from ood_store._export import figures, tables

    for name, label, bold in (("split11", "9+ 11\u2212", False), ("agree19", "19+ 1\u2212", True)):
        table, _ = _reference_set(name)
        comparison = compare(table)
        figure = figures.sign_agreement(comparison.table)
        (ax,) = [axis for axis in figure.axes if axis.get_label() != "<colorbar>"][:1]
        (text,) = [t for t in ax.texts if t.get_text() == label]
        assert (text.get_fontweight() == "bold") is bold
        assert not any(patch.get_hatch() for patch in ax.patches)  # neither is model-dependent
        markdown = tables.compare_table(comparison.table).render("markdown")
        assert ("mixed" in markdown) is not bold and ("consistently positive" in markdown) is bold


def test_docstring_examples_run():
    import importlib

    names = (
        "ood_store._analysis.verdicts",
        "ood_store._analysis.results",
        "ood_store._analysis.compare",
        "ood_store._names",
    )
    for name in names:
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0 and result.attempted > 0, name
