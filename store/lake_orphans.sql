-- Delete the data files no snapshot names: left by writers killed before they committed (ood-store vacuum).
CALL ducklake_delete_orphaned_files('store', cleanup_all => true)
