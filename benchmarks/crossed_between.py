"""`compare --between` over items and runs, measured on planted studies: false findings at the nulls, power.

    python benchmarks/crossed_between.py [--studies 400] [--resamples 200] [--seed 0] [--only NAME ...]
                                         [--processes 2] [--out benchmarks/results/crossed_between.csv]

Each study is :func:`ood_store._analysis.studysim.planted_study` with 12 runs, two families of six seeds (the
same items in every run, 30 log-spaced checkpoints, OOD testsets of 1,500 items), analyzed as a user would:
``ood_store.partial_correlations`` on its scores, then ``ood_store.between_groups(..., between="family",
within="seed")`` with its items (over items and runs) and without them (runs only). Settings:

  null-spans-N       X and Y with signals of their own, none shared, in both families; but one family's
                     ability rises 2.2 logits over training and the other's 0.8, so the control's noise biases
                     their naive r by different amounts (N in-domain items)
  null-pure-spans-60 the same with X and Y pure functions of ability
  diff-0.8-0-N       a shared signal of partial r 0.8 in one family's runs, none in the other's
  diff-0.8-(-0.8)-60 +0.8 in one family, -0.8 in the other

Per setting: the share of studies whose test between families rejects at 0.05 (``false_*`` at a null, with
its Monte Carlo error 1.96 sqrt(p (1 - p) / studies); ``found_*`` with a planted difference), over items and
runs and over runs only, and the median of each family's pooled r over items (``r_a``, ``r_b``: r*).
"""

from __future__ import annotations

from pathlib import Path

import common
import numpy as np
import polars as pl

import ood_store
from ood_store._analysis.studysim import study_frames

OUT = Path(__file__).parent / "results" / "crossed_between.csv"
SPANS = [2.2] * 6 + [0.8] * 6
SETTINGS = {
    "null-spans-60": {"items": 60, "span": SPANS},
    "null-spans-500": {"items": 500, "span": SPANS},
    "null-pure-spans-60": {"items": 60, "span": SPANS, "signal": 0.0},
    "diff-0.8-0-60": {"items": 60, "shared": [0.8] * 6 + [0.0] * 6},
    "diff-0.8-0-500": {"items": 500, "shared": [0.8] * 6 + [0.0] * 6},
    "diff-0.8-(-0.8)-60": {"items": 60, "shared": [0.8] * 6 + [-0.8] * 6},
}


def one_study(args: tuple[str, int, int, int]) -> dict:
    name, index, resamples, seed = args
    study = common.planted(SETTINGS, name, index, seed, runs=12)
    scores, items = study_frames(study)
    analysis = ood_store.partial_correlations(scores, in_domain="in-domain")
    runs = pl.DataFrame({"run": list(study.runs), "family": ["a"] * 6 + ["b"] * 6,
                         "seed": [str(k) for k in range(6)] * 2})  # fmt: skip
    options = {"between": "family", "within": "seed", "attributes": runs}
    over_items = ood_store.between_groups(analysis, **options, items=items, item_resamples=resamples, seed=index)
    runs_only = ood_store.between_groups(analysis, **options, item_inference="runs")
    row, plain = over_items.table.row(0, named=True), runs_only.table.row(0, named=True)
    return {"setting": name, "p_items": row["p_between_adj"], "p_runs": plain["p_between_adj"],
            "r_a": row["r:a"], "r_b": row["r:b"], "basis": row["basis"]}  # fmt: skip


def summarize(rows: pl.DataFrame) -> pl.DataFrame:
    out = []
    for (name,), part in rows.group_by("setting", maintain_order=True):
        studies = part.height
        word = "false" if str(name).startswith("null") else "found"
        row: dict[str, object] = {"setting": name, "studies": studies}
        for basis in ("items", "runs"):
            share = float((part[f"p_{basis}"] < 0.05).mean())
            row[f"{word}_{basis}"] = share
            if word == "false":
                row[f"{word}_{basis}_mc"] = 1.96 * np.sqrt(share * (1 - share) / studies)
        row["r_a"], row["r_b"] = float(part["r_a"].median()), float(part["r_b"].median())
        row["over_items"] = float((part["basis"] == "items and runs").mean())
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None)


def main() -> None:
    args = common.planted_arguments(__doc__.splitlines()[0], SETTINGS, OUT).parse_args()
    design = ", 12 runs (two families of 6 seeds)"
    common.write_table(*common.run_planted(args, SETTINGS, one_study, summarize, design), args.out)


if __name__ == "__main__":
    main()
