"""Holds evaluated units before they are finished, so that a real-cluster test can cancel workers or let them
run into their time limit at a chosen point (tests/test_evaluate_cluster.py puts this folder on PYTHONPATH).

Python imports ``sitecustomize`` at start-up, here in every process the test starts (the ``ood-store``
command, and through sbatch's environment, every Slurm task). With ``OOD_STORE_TEST_HOLD=FOLDER`` set,
``ood_store._evaluate.harness.run_lm_eval`` (lm-eval's whole evaluation of one checkpoint, before its
files are renamed into place and the completion marker written) is wrapped, as the module is imported,
so that after it returns the worker touches ``FOLDER/holding-STEP`` and waits until ``FOLDER/release-STEP``
exists. With ``OOD_STORE_TEST_HOLD_FIRST_RUN=1`` it holds only in a Slurm task's first run (not once the
task has been requeued: ``SLURM_RESTART_COUNT`` 1 or more). Nothing else changes.
"""

import importlib.abc
import os
import sys
import time
from pathlib import Path

TARGET = "ood_store._evaluate.harness"


def _hold(step) -> None:
    folder = Path(os.environ["OOD_STORE_TEST_HOLD"])
    (folder / f"holding-{step}").touch()
    while not (folder / f"release-{step}").exists():
        time.sleep(0.1)


def _wrap(module) -> None:
    real = module.run_lm_eval

    def run_lm_eval(checkpoint, *args, **kwargs):
        result = real(checkpoint, *args, **kwargs)
        _hold(checkpoint.step)
        return result

    module.run_lm_eval = run_lm_eval


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the harness module as the other finders do, and wraps its loader's exec_module."""

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                exec_module = spec.loader.exec_module

                def wrapped(module, exec_module=exec_module):
                    exec_module(module)
                    _wrap(module)

                spec.loader.exec_module = wrapped
                return spec
        return None


first_run = int(os.environ.get("SLURM_RESTART_COUNT") or 0) == 0
if os.environ.get("OOD_STORE_TEST_HOLD") and (first_run or not os.environ.get("OOD_STORE_TEST_HOLD_FIRST_RUN")):
    sys.meta_path.insert(0, _Finder())
