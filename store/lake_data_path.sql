-- The data path a lake's catalog records (the lake is attached as `store`: store/lake.py).
SELECT value FROM ducklake_options('store') WHERE option_name = 'data_path'
