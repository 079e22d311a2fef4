-- When the snapshot the connection reads was committed, in seconds since the epoch (UTC).
SELECT epoch(snapshot_time) FROM ducklake_snapshots('store') WHERE snapshot_id = (SELECT id FROM store.current_snapshot())
