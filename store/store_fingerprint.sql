-- A store file's equivalent of a lake's snapshot: a hash of what analyses read, which changes with every
-- file ingested, merged or removed, every run's attributes and every campaign (store/database.py).
SELECT md5(
    coalesce((SELECT string_agg(concat_ws('|', content_hash, run, step, campaign), ',' ORDER BY content_hash, evaluation_id)
              FROM evaluations), '')
    || '#' ||
    coalesce((SELECT string_agg(concat_ws('|', run, base_model, family, size, in_domain_task, seed, attributes::VARCHAR), ',' ORDER BY run)
              FROM runs), '')
)
