"""The local viewer, ``ood-store serve``: every view of the study in a browser, read-only.

:mod:`~ood_store._serve.app` is the Starlette application (its routes and their
``.json``, ``.pdf`` and ``.svg`` twins), :mod:`~ood_store._serve.pages` what each
page shows, computed from the results objects the command line uses,
:mod:`~ood_store._serve.charts` the Vega-Lite specs, :mod:`~ood_store._serve.reading`
how the store is opened (read-only, for one page at a time),
:mod:`~ood_store._serve.sqlbox` the SQL box, :mod:`~ood_store._serve.security`
what every request goes through. ``static/vendor/`` holds the Vega bundle the
pages load (VERSIONS.json says which). Needs the ``serve`` extra.
"""
