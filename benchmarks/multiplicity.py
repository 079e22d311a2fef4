"""False verdicts on planted studies where 27 of 28 pairs are null, before and after the adjustment over pairs.

    python benchmarks/multiplicity.py [--studies 200] [--first 0] [--ar1 0 0.5]

Each study is ood_store/_examples/null_studies.py's: 24 runs (4 families x 2 sizes x 3 seeds), 30 checkpoints,
8 OOD testsets, rte-hans planted +0.6 in two families and -0.6 in the other two, every other pair 0 in every run;
the residual curves independent noise (--ar1 0, the issue's shape) or AR(1) over the checkpoints (--ar1 0.5).
partial_correlations (linear, Holm within runs) analyses it once; then, for each setting:

  before            compare(test="z", adjust_pairs="none"): the verdicts as they were (each pair's Q and pooled
                    interval at alpha on its own, the normal reference)
  holm (default)    compare(): Knapp-Hartung, both tests of every pair Holm-adjusted in one family
  fdr_bh            compare(adjust_pairs="fdr_bh")
  z, holm           compare(test="z"): the adjustment alone

and the same for compare --between family --within replicate (size and seed): "differs by family" on a null pair
is a false verdict. A false verdict: anything but "no evidence" (or "too few runs") on a null pair, or "differs"
between families. Reported, with Monte Carlo standard errors over the studies: the share of studies with any false
verdict (what Holm controls), false verdicts per study, the mean share of false verdicts among a study's verdicts
that find something (what Benjamini-Hochberg controls), and the share of studies in which the planted pair is found
(model-dependent; between families: differs). Results go to benchmarks/results/multiplicity.csv.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import polars as pl

from ood_store._analysis import between_groups, compare, partial_correlations
from ood_store._examples import null_studies

RESULTS = Path(__file__).resolve().parent / "results" / "multiplicity.csv"
SETTINGS = {
    "before": {"test": "z", "adjust_pairs": "none"},
    "holm (default)": {},
    "fdr_bh": {"adjust_pairs": "fdr_bh"},
    "z, holm": {"test": "z"},
}
FOUND = {"compare": "model-dependent", "between": "differs by family beyond replicate variation"}
NOTHING = {"no evidence", "too few runs", "not shown to differ by family beyond replicate variation"}


def verdicts(index: int, ar1: float = 0.0) -> pl.DataFrame:
    """Study ``index``'s verdicts under every setting: ``ar1, study, setting, kind, planted, verdict`` per pair."""
    scores, runs = null_studies.study(index, ar1)
    table = partial_correlations(scores, null_studies.IN_DOMAIN).table
    parts = []
    for name, options in SETTINGS.items():
        for kind in ("compare", "between"):
            if kind == "compare":
                out = compare(table, **options).table
            else:
                out = between_groups(table, between="family", within="replicate", attributes=runs, **options).table
            planted = [null_studies.is_planted(x, y) for x, y in out.select("task_x", "task_y").iter_rows()]
            labels = [pl.lit(ar1).alias("ar1"), pl.lit(index).alias("study"), pl.lit(name).alias("setting")]
            parts.append(out.select(*labels, pl.lit(kind).alias("kind"), pl.Series("planted", planted), "verdict"))
    return pl.concat(parts)


def summary(frame: pl.DataFrame) -> pl.DataFrame:
    """Per setting and kind: false-verdict rates over the studies, with Monte Carlo standard errors."""
    per_study = frame.group_by("ar1", "setting", "kind", "study", maintain_order=True).agg(
        false=(~pl.col("planted") & ~pl.col("verdict").is_in(list(NOTHING))).sum(),
        findings=(~pl.col("verdict").is_in(list(NOTHING))).sum(),
        found=(pl.col("planted") & pl.col("verdict").is_in(list(FOUND.values()))).any(),
        null_pairs=(~pl.col("planted")).sum(),
    )
    per_study = per_study.with_columns(
        any_false=pl.col("false") > 0,
        false_share=pl.when(pl.col("findings") > 0).then(pl.col("false") / pl.col("findings")).otherwise(0.0),
    )
    out = per_study.group_by("ar1", "setting", "kind", maintain_order=True).agg(
        studies=pl.len(),
        null_pairs=pl.col("null_pairs").sum(),
        false_verdicts=pl.col("false").sum(),
        any_false=pl.col("any_false").mean(),
        any_false_se=pl.col("any_false").std(ddof=0) / pl.len().sqrt(),
        false_per_study=pl.col("false").mean(),
        false_share=pl.col("false_share").mean(),
        false_share_se=pl.col("false_share").std(ddof=0) / pl.len().sqrt(),
        planted_found=pl.col("found").mean(),
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--ar1", type=float, nargs="+", default=[0.0, 0.5])
    args = parser.parse_args()
    started = time.perf_counter()
    frames = []
    for ar1 in args.ar1:
        for index in range(args.first, args.first + args.studies):
            frames.append(verdicts(index, ar1))
            if (index - args.first + 1) % 20 == 0:
                print(
                    f"ar1 {ar1:g}, {index - args.first + 1} studies: {time.perf_counter() - started:.0f} s", flush=True
                )
    table = summary(pl.concat(frames))
    RESULTS.parent.mkdir(exist_ok=True)
    table.write_csv(RESULTS)
    with pl.Config(tbl_rows=20, tbl_cols=20, tbl_width_chars=200, float_precision=4):
        print(table)
    se = math.sqrt(0.05 * 0.95 / args.studies)
    print(f"Monte Carlo standard error of a share of 0.05 over {args.studies} studies: {se:.4f}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
