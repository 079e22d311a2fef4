-- A new lake's schema_version: the versions of the file schema its tables were read from (store/lake.py).
INSERT INTO store.main.schema_version SELECT * FROM lake_template.main.schema_version ORDER BY version
