"""The ood_nli testset suite: NLI-style testsets cast to one two-way format, for any prompt variant.

- :mod:`~ood_store._evaluate.suite.testsets`: the testsets, where their data come
  from, their splits and sizes, their display names (the one definition);
- :mod:`~ood_store._evaluate.suite.labels`: each testset's column layouts and labels,
  cast to Yes/No under a neutral scheme;
- :mod:`~ood_store._evaluate.suite.variant`: prompt variants (pattern, verbalizers,
  neutral scheme) and the shipped patterns;
- :mod:`~ood_store._evaluate.suite.configs`: the lm-eval task configs of a variant,
  built at run time;
- :mod:`~ood_store._evaluate.suite.export` and :mod:`~ood_store._evaluate.suite.check`:
  the data as local files for machines without internet, and their check;
- :mod:`~ood_store._evaluate.suite.stored`: the variants a store holds, and scores of
  one variant per run under the suite's plain task names.

Nothing heavy is imported here.
"""
