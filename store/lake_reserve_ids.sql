-- Reserve $n evaluation ids on a lake (which has no sequences; lake_next_id reads the first). In the
-- caller's write transaction, after lake_begin_write, so that no other writer reserves the same ones.
UPDATE lake_writes SET next_evaluation_id = next_evaluation_id + $n
