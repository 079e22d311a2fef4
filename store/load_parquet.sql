-- Fills the table named in braces of a staging database from the dump's Parquet files $files, by column name;
-- the EXCLUDE in braces lists the columns the dump added (the run of per-evaluation rows), if any.
INSERT INTO {table} BY NAME
SELECT * {exclude} FROM read_parquet($files, hive_partitioning = false)
