"""Where scores are made: lm-evaluation-harness run on every checkpoint of a run (needs the ``eval`` extra).

:func:`~ood_store._evaluate.runner.evaluate` is the runner; checkpoints are
resolved in :mod:`~ood_store._evaluate.checkpoints`, task lists in
:mod:`~ood_store._evaluate.tasklist`, and the ``ood_nli`` testset suite lives in
:mod:`ood_store._evaluate.suite`. Nothing is imported here, so that the
suite's modules (label maps, variants) load only what they use.
"""
