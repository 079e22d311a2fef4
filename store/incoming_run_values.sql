-- Run $run's attribute columns and free-form attributes (JSON) in the attached store `incoming`.
SELECT base_model, family, size, in_domain_task, seed, CAST(attributes AS VARCHAR) FROM incoming.runs WHERE run = $run
