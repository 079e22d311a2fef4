-- Set a run's attributes; NULL parameters leave a column as it is.
UPDATE runs SET
    base_model = coalesce($base_model, base_model),
    family = coalesce($family, family),
    size = coalesce($size, size),
    in_domain_task = coalesce($in_domain_task, in_domain_task),
    seed = coalesce($seed, seed),
    attributes = $attributes
WHERE run = $run;
