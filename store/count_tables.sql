-- How many tables the database holds, ood-store's or not.
SELECT count(*) FROM duckdb_tables()
