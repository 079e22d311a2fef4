-- How many evaluations the attached store `incoming` holds.
SELECT count(*) FROM incoming.evaluations
