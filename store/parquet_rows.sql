-- How many rows the Parquet files $files hold, by their footers.
SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata($files)
