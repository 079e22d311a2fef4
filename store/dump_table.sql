-- One table of the store, rows in a stable order. the table name in braces is filled in, quoted.
SELECT * FROM {table} ORDER BY ALL
