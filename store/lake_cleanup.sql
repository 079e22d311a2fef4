-- Delete the data files that only expired snapshots named (ood-store vacuum).
CALL ducklake_cleanup_old_files('store', cleanup_all => true)
