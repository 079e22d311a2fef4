"""Where results leave for papers: tables, figures, display names and provenance.

:mod:`~ood_store._export.tables` (LaTeX, Markdown, CSV, JSON, Parquet) and
:mod:`~ood_store._export.figures` (PDF, PNG, SVG) read saved analyses;
:mod:`~ood_store._export.display` maps names to the ones a paper prints and
orders runs; :mod:`~ood_store._export.provenance` records what made each file;
:mod:`~ood_store._export.formats` is the one registry of output formats.
Nothing is imported here (matplotlib is slow to load): import the module you use.
"""
