"""Speed of `ood-store plan`: a 100-design grid of 1,000 replications with the linear residualizer.

    python benchmarks/plan_speed.py [--replications 1000] [--threads 1 2] [--baseline-studies 20]

The grid: two families (r = +0.3 and -0.3), 2 to 11 seeds a family x 12 to 48 checkpoints (10 values each: 100
designs), tau 0.2, lag-1 autocorrelation 0.6 at 24 checkpoints, item noise 0.5 of the curves' variance; every design
simulated for its power and for its type I error (2 x 1,000 studies, 200,000 in all). Timed as a whole
`power_analysis` call per --threads value, wall clock and CPU, with the machine's load average before and after
(these machines are shared: read the ratio to the baseline, not the seconds).

The baseline is what one would write without `plan`: each simulated study written as a frame and analyzed by
`partial_correlations` and `between_groups`, one study at a time (--baseline-studies of the grid's middle design,
5 seeds x 28 checkpoints, timed and scaled to the grid's 200,000 studies by their runs x checkpoints).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import polars as pl

from ood_store._analysis import between_groups, partial_correlations
from ood_store._analysis.power import power_analysis
from ood_store._analysis.simulate import Curves, simulate

SEEDS = list(range(2, 12))
CHECKPOINTS = list(range(12, 49, 4))
CURVES = Curves(ar1=0.6, noise=(0.5, 0.5))


def grid(replications: int, threads: int) -> dict:
    load = os.getloadavg()[0]
    cpu, wall = time.process_time(), time.perf_counter()
    result = power_analysis(
        [0.3, -0.3], seeds=SEEDS, checkpoints=CHECKPOINTS, tau=0.2, curves=CURVES, replications=replications,
        threads=threads,
    )  # fmt: skip
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    studies = 2 * replications * result.table.height
    work = int((result.table["runs"] * result.table["checkpoints"]).sum()) * 2 * replications
    return {"threads": threads, "designs": result.table.height, "studies": studies, "wall_s": wall, "cpu_s": cpu,
            "load_before": load, "load_after": os.getloadavg()[0], "work": work}  # fmt: skip


def baseline(studies: int, seeds: int = 5, checkpoints: int = 28) -> dict:
    """Studies of one design analyzed one at a time through the frame API: seconds per run x checkpoint."""
    positions = CURVES.positions(checkpoints)
    z = CURVES.in_domain_curve(positions)
    neighbours = CURVES.neighbours(positions)
    families = np.repeat(["a", "b"], seeds)
    runs = pl.DataFrame({"run": [f"r{j}" for j in range(2 * seeds)], "family": families,
                         "seed": [str(s) for s in list(range(seeds)) * 2]})  # fmt: skip
    rng = np.random.default_rng(0)
    wall = time.perf_counter()
    for _ in range(studies):
        rho = np.tanh(np.arctanh(np.repeat([0.3, -0.3], seeds)) + 0.2 * rng.standard_normal(2 * seeds))
        x, y = simulate(rng, rho, neighbours, CURVES.noise)
        frames = []
        for j in range(2 * seeds):
            values = {"z": z, "x": x[:, j], "y": y[:, j]}
            frames.append(pl.DataFrame({"run": f"r{j}", "step": np.tile(np.arange(checkpoints), 3),
                                        "task": np.repeat(list(values), checkpoints),
                                        "value": np.concatenate(list(values.values()))}))  # fmt: skip
        table = partial_correlations(pl.concat(frames), "z").table
        between_groups(table, between="family", within="seed", attributes=runs, adjust_pairs="none")
    wall = time.perf_counter() - wall
    return {"studies": studies, "wall_s": wall, "per_run_checkpoint_s": wall / (studies * 2 * seeds * checkpoints)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--baseline-studies", type=int, default=20)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()}")
    base = baseline(args.baseline_studies)
    print(f"baseline: {base['studies']} studies one at a time in {base['wall_s']:.1f} s "
          f"({base['per_run_checkpoint_s'] * 1e6:.1f} us per run x checkpoint)")  # fmt: skip
    for threads in args.threads:
        row = grid(args.replications, threads)
        extrapolated = base["per_run_checkpoint_s"] * row["work"]
        print(
            f"plan, {row['designs']} designs x {args.replications} replications x 2 hypotheses "
            f"({row['studies']:,} studies) on {threads} thread(s): {row['wall_s']:.1f} s wall, {row['cpu_s']:.1f} s "
            f"CPU (load average {row['load_before']:.1f} before, {row['load_after']:.1f} after); the baseline would "
            f"take about {extrapolated / 60:.0f} min: {extrapolated / row['wall_s']:.0f}x"
        )


if __name__ == "__main__":
    main()
