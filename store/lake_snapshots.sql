-- Every snapshot of the lake (attached as `store`), oldest first, with the commit's author, command and
-- what it wrote (commit_extra_info: JSON that ood-store writes, store/lake.py).
SELECT s.snapshot_id AS snapshot,
       epoch(CAST(s.snapshot_time AS TIMESTAMPTZ)) AS seconds,  -- a SQLite catalog keeps it as text
       c.author,
       c.commit_message AS command,
       c.commit_extra_info AS extra,
       c.changes_made AS changes
FROM __ducklake_metadata_store.ducklake_snapshot s
LEFT JOIN __ducklake_metadata_store.ducklake_snapshot_changes c USING (snapshot_id)
ORDER BY s.snapshot_id
