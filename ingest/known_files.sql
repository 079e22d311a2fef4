-- Every evaluation already in the store by content hash: ingest skips files with the same bytes.
SELECT content_hash, source_path, run, evaluation_id, campaign FROM evaluations
