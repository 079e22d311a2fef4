-- The first statement of every write transaction on a lake: two transactions that overlap both update
-- this row, and DuckLake refuses the second commit (a conflict, run again by store/lake.py).
UPDATE lake_writes SET writes = writes + 1
