-- The parameters saved analysis $name was computed with, as JSON text.
SELECT CAST(params AS VARCHAR) FROM analyses WHERE name = $name
