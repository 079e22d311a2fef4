-- Which of the content hashes $hashes the store holds already (stored by another writer of a lake since
-- the ingest read the store), with the evaluation each names.
SELECT content_hash, evaluation_id, source_path, run, campaign FROM evaluations WHERE content_hash IN (SELECT unnest($hashes::VARCHAR[]))
