-- Runs of `incoming` that the store does not have.
INSERT INTO runs BY NAME
SELECT * FROM incoming.runs WHERE run NOT IN (SELECT run FROM runs)
