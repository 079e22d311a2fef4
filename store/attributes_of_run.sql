-- The free-form attributes (JSON) of run $run; no row when the run does not exist.
SELECT attributes FROM runs WHERE run = $run
