-- When snapshot $at (NULL: the one the connection reads) was committed, in seconds since the epoch (UTC).
SELECT epoch(snapshot_time) FROM ducklake_snapshots('store')
WHERE snapshot_id = coalesce($at, (SELECT id FROM store.current_snapshot()))
