"""How long `import ood_store._analysis` takes, and what it imports, now and as it was with statsmodels.

    python benchmarks/analysis_import.py [--repeats 10]

Each measurement is a fresh interpreter that times the import (time.perf_counter around it) and counts
sys.modules. "now" imports the analysis as it is; "with statsmodels" first imports
statsmodels.stats.multitest, the one module the analysis imported before its p-value adjustment moved to SciPy
(it brings pandas; arch, which needs both, was already imported only by a bootstrap). The two alternate, so that the
shared machine's load falls on both alike; medians are reported, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CODE = (
    "import sys, time\n"
    "{before}\n"
    "start = time.perf_counter()\n"
    "import ood_store._analysis\n"
    "print(time.perf_counter() - start, len(sys.modules), 'pandas' in sys.modules, 'statsmodels' in sys.modules)\n"
)
VARIANTS = ("now", "with statsmodels")
_BEFORE = "import statsmodels.stats.multitest  # the analysis' import before; counted in its time below"


def measure(variant: str) -> tuple[float, int, bool, bool]:
    if variant == "now":
        code = CODE.format(before="")
    else:  # time both imports together: the analysis then imported statsmodels itself
        code = CODE.replace("{before}\n", "").replace(
            "import ood_store._analysis\n", f"{_BEFORE}\nimport ood_store._analysis\n"
        )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]), out[2] == "True", out[3] == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    results: dict[str, list] = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name in VARIANTS:
            results[name].append(measure(name))
    medians = {}
    for name, rows in results.items():
        medians[name] = statistics.median(row[0] for row in rows)
        _, modules, pandas, statsmodels = rows[-1]
        imported = [module for module, present in (("pandas", pandas), ("statsmodels", statsmodels)) if present]
        print(f"{name:17s} median {medians[name]:.2f} s (min {min(r[0] for r in rows):.2f}), {modules} modules, "
              f"imports {', '.join(imported) or 'neither pandas nor statsmodels'}")  # fmt: skip
    print(f"ratio now / with statsmodels: {medians['now'] / medians['with statsmodels']:.2f}; "
          f"load average after: {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
