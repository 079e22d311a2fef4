-- How many runs, evaluations and saved analyses the store holds (0: an empty store).
SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM evaluations) + (SELECT count(*) FROM analyses)
