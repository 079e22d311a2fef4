DETACH DATABASE IF EXISTS ood_store_incoming
