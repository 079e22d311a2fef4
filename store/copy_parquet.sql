-- Writes the rows of the query given (in braces below) to the Parquet file $path.
COPY ({query}) TO $path (FORMAT parquet, COMPRESSION zstd)
