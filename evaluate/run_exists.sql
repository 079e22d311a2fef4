-- 1 when run $run is in the store, else 0.
SELECT count(*) FROM runs WHERE run = $run
