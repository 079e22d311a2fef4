-- Where the evaluations $ids came from (for messages).
SELECT evaluation_id, source_path, source_format FROM evaluations WHERE list_contains($ids, evaluation_id)
