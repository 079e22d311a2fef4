-- Shuts the sandbox (store/sandbox.py): queries read the store and the folders allowed, nothing else,
-- and cannot set anything back. The order matters: DuckDB takes no folders once external access is off.
USE store;
SET allowed_directories = $folders;
SET enable_external_access = false;
SET lock_configuration = true;
