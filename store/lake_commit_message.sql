-- Who commits and what: shown by `ood-store snapshots`.
CALL store.set_commit_message($author, $message, extra_info => $extra)
