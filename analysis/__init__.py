"""The analysis layer: partial correlations across OOD testsets (to come).

Series are pulled out of the store with SQL (``Store.query``) and analysed
with NumPy / statsmodels; results come back as Polars DataFrames.
"""
