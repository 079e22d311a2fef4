-- 0006_documents: the documents of the per-sample rows, once each.
--
-- `samples` keeps each document's hash (lm-eval's doc_hash), not the document. This table keeps the
-- document itself, once per (task, doc_hash) however many checkpoints, filters and evaluations hold it,
-- so that a testset's items can be split by any field of their documents (HANS's `heuristic`, ANLI's
-- round: `ood-store analyze --slice TASK:FIELD`). A sample row finds its document by (task, doc_hash).
-- (task, doc_hash) is unique, kept by the writers (ingest and merge insert only the pairs not held yet)
-- rather than by a PRIMARY KEY index, which would slow a bulk ingest as it did evaluation_scores (0005).
-- A store migrated to this version has no documents of the samples it holds; ingest writes them for
-- the samples files it reads from now on.
CREATE TABLE documents (
    task      VARCHAR NOT NULL,
    doc_hash  VARCHAR NOT NULL,
    doc       JSON NOT NULL            -- the sample line's `doc` object, as the file holds it
);
