-- Run $run's attribute columns and free-form attributes (JSON) in the attached store `ood_store_incoming`.
SELECT base_model, family, size, in_domain_task, seed, CAST(attributes AS VARCHAR) FROM ood_store_incoming.runs WHERE run = $run
