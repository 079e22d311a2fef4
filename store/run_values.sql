-- Run $run's attribute columns and free-form attributes (JSON); no row when the run does not exist.
SELECT base_model, family, size, in_domain_task, seed, CAST(attributes AS VARCHAR) FROM runs WHERE run = $run
