-- The first of the $n evaluation ids lake_reserve_ids reserved.
SELECT next_evaluation_id - $n FROM lake_writes
