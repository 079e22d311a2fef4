-- Expire these snapshots of the lake: `--at` can no longer open them (ood-store vacuum).
CALL ducklake_expire_snapshots('store', versions => $versions)
