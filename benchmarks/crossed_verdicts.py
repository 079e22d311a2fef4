"""Verdicts over items and runs, measured on planted studies: false verdicts at the nulls, power, coverage.

    python benchmarks/crossed_verdicts.py [--studies 400] [--runs 8] [--resamples 200] [--seed 0]
                                          [--only NAME ...] [--processes 2]
                                          [--out benchmarks/results/crossed_verdicts.csv]

Each study is :func:`ood_store._analysis.studysim.planted_study` (the same items in every run, 30 log-spaced
checkpoints, OOD testsets of 1,500 items, an item's answers persisting over checkpoints), analyzed as a user
would: ``ood_store.partial_correlations`` on its scores, then ``ood_store.compare`` with its items (verdicts
over items and runs) and without them (runs only). Settings (in-domain items × truth):

  null-own-N        X and Y with independent signals of their own (sd 0.3 on the logit scale), none shared
  null-pure-N       X and Y pure functions of ability, with their own items (no signal)
  misfit-5000       the null with X and Y harder than the in-domain testset: their noise-free scores curve
                    against it (a linear residualizer's misfit; the tetrad's one-factor model does not hold)
  shared-S-N        a shared signal: X's and Y's signals correlate S (the noise-free partial r given ability)
  ...-drift         X's and Y's signals drift over training: an AR(1) over the checkpoints, lag-1 correlation 0.8
  ...-Nruns         the same with N runs instead of --runs (12, 16, 24)

Per setting it reports, over the studies:

  false_items, false_items_mc    items and runs: the share of studies with a "consistently positive/negative",
                                 "mixed" or "model-dependent" verdict at a null (a false finding), and its Monte
                                 Carlo error 1.96 sqrt(p (1 - p) / studies)
  found_items                    at a shared signal: the share called "consistently positive"
  covers_items, covers_adj_items at a null: the share whose pooled interval (ci_low..ci_high, and the adjusted
                                 one) covers 0, the truth
  false_runs, found_runs         the same verdicts over runs only (the comparison as it was)
  r_items, r_runs                the median pooled r of each
  contains                       the share of rows whose printed pooled intervals contain r_pooled: 1
"""

from __future__ import annotations

from pathlib import Path

import common
import numpy as np
import polars as pl

import ood_store
from ood_store._analysis.studysim import study_frames

OUT = Path(__file__).parent / "results" / "crossed_verdicts.csv"
FINDINGS = ("consistently positive", "consistently negative", "mixed", "model-dependent")
SETTINGS = {
    **{f"null-own-{n}": {"items": n, "signal": 0.3, "shared": 0.0} for n in (60, 500, 5000)},
    **{f"null-pure-{n}": {"items": n, "signal": 0.0, "shared": 0.0} for n in (60, 500, 5000)},
    "misfit-5000": {"items": 5000, "signal": 0.3, "shared": 0.0, "difficulty_means": (-0.5, 0.5, 0.3)},
    **{f"shared-0.5-{n}": {"items": n, "signal": 0.3, "shared": 0.5} for n in (60, 500, 5000)},
    **{f"shared-0.8-{n}": {"items": n, "signal": 0.3, "shared": 0.8} for n in (60, 5000)},
    # X's and Y's signals drifting over training (an AR(1) over checkpoints, lag-1 correlation 0.8)
    **{f"null-own-{n}-drift": {"items": n, "signal": 0.3, "shared": 0.0, "signal_persistence": 0.8} for n in (60, 500)},
    "shared-0.5-500-drift": {"items": 500, "signal": 0.3, "shared": 0.5, "signal_persistence": 0.8},
    # the 60-item control with 12, 16 and 24 runs (24: the size of the speed target's study): what more runs buy
    **{f"shared-0.5-60-{runs}runs": {"items": 60, "signal": 0.3, "shared": 0.5, "runs": runs} for runs in (12, 16)},
    "null-own-60-16runs": {"items": 60, "signal": 0.3, "shared": 0.0, "runs": 16},
    "null-own-60-24runs": {"items": 60, "signal": 0.3, "shared": 0.0, "runs": 24},
    "null-pure-60-24runs": {"items": 60, "signal": 0.0, "shared": 0.0, "runs": 24},
    "shared-0.5-60-24runs": {"items": 60, "signal": 0.3, "shared": 0.5, "runs": 24},
}


def one_study(args: tuple[str, int, int, int, int]) -> dict:
    name, index, runs, resamples, seed = args
    study = common.planted(SETTINGS, name, index, seed, runs)
    scores, items = study_frames(study)
    analysis = ood_store.partial_correlations(scores, in_domain="in-domain")
    with_items = ood_store.compare(analysis, items=items, item_resamples=resamples, seed=index).table.row(0, named=True)
    runs_only = ood_store.compare(analysis).table.row(0, named=True)
    contains = all(
        row[low] is None or row[low] <= row["r_pooled"] <= row[high]
        for row in (with_items, runs_only)
        for low, high in (("ci_low", "ci_high"), ("ci_low_adj", "ci_high_adj"))
    )
    return {
        "setting": name,
        "verdict_items": with_items["verdict"],
        "verdict_runs": runs_only["verdict"],
        "r_items": with_items["r_pooled"],
        "r_runs": runs_only["r_pooled"],
        "covers_items": with_items["ci_low"] <= 0 <= with_items["ci_high"],
        "covers_adj_items": with_items["ci_low_adj"] <= 0 <= with_items["ci_high_adj"],
        "contains": contains,
    }


def summarize(rows: pl.DataFrame) -> pl.DataFrame:
    out = []
    for (name,), part in rows.group_by("setting", maintain_order=True):
        studies = part.height
        null = not str(name).startswith("shared")
        row: dict[str, object] = {"setting": name, "studies": studies}
        for basis in ("items", "runs"):
            verdicts = part[f"verdict_{basis}"]
            if null:
                share = float(verdicts.is_in(FINDINGS).mean())
                row[f"false_{basis}"] = share
                row[f"false_{basis}_mc"] = 1.96 * np.sqrt(share * (1 - share) / studies)
            else:
                row[f"found_{basis}"] = float((verdicts == "consistently positive").mean())
            row[f"r_{basis}"] = float(part[f"r_{basis}"].median())
        if null:
            row["covers_items"] = float(part["covers_items"].mean())
            row["covers_adj_items"] = float(part["covers_adj_items"].mean())
        row["contains"] = float(part["contains"].mean())
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None)


def main() -> None:
    parser = common.planted_arguments(__doc__.splitlines()[0], SETTINGS, OUT)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--label", default="", help="Appended to each setting's name in the output (e.g. -24runs).")
    args = parser.parse_args()
    design = f" × {args.runs} runs (unless named)"
    table, heading = common.run_planted(args, SETTINGS, one_study, summarize, design, args.runs)
    common.write_table(table.with_columns(pl.col("setting") + args.label), heading, args.out)


if __name__ == "__main__":
    main()
