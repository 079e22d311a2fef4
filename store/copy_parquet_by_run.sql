-- Writes the rows of the query given (in braces below) under the folder $path, one folder per run (hive style,
-- run=<url-encoded name>/data_0.parquet), each file keeping its run column too, so that
-- the files can be read without hive partitioning (which would also read key=value
-- folders above the dump as columns).
COPY ({query}) TO $path (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (run), WRITE_PARTITION_COLUMNS true)
