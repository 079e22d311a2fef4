-- The tasks `documents` holds documents of.
SELECT DISTINCT task FROM documents ORDER BY task;
