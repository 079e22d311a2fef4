-- The type of the database the connection uses: 'ducklake' on a lake (store/lake.py), 'duckdb' on a file.
SELECT type FROM duckdb_databases() WHERE database_name = current_database()
