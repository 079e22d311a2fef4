-- Fills the table named in braces of a staging database from the same table of the attached store `ood_store_source`.
INSERT INTO {table} BY NAME SELECT * FROM ood_store_source.{table}
