-- The lake's snapshot the connection reads (its latest, or the one it was opened at).
SELECT id FROM store.current_snapshot()
