-- One row: the lake's write counter (every write transaction updates it, so that overlapping writers
-- conflict) and the next evaluation id (a lake has no sequences).
CREATE TABLE lake_writes (writes BIGINT NOT NULL, next_evaluation_id BIGINT NOT NULL);
INSERT INTO lake_writes VALUES (0, 1)
