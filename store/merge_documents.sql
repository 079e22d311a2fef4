-- The documents of the attached store `ood_store_incoming` that this store does not hold yet, each
-- (task, doc_hash) once: documents are shared by evaluations, so they are matched by key, not renumbered.
INSERT INTO documents BY NAME
SELECT DISTINCT ON (i.task, i.doc_hash) i.task, i.doc_hash, i.doc
FROM ood_store_incoming.documents AS i
WHERE NOT EXISTS (SELECT 1 FROM documents AS d WHERE d.task = i.task AND d.doc_hash = i.doc_hash)
