-- Fills the table named in braces of a staging database from the same table of the attached store `source`.
INSERT INTO {table} BY NAME SELECT * FROM source.{table}
