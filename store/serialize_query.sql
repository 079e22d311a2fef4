-- The parse tree of a query as JSON (DuckDB's own parser), for the read-only check of store/query.py.
SELECT json_serialize_sql($sql)
