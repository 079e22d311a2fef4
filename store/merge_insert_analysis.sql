-- Copies saved analysis $name, with its rows, from `incoming`.
INSERT INTO analyses BY NAME SELECT * FROM incoming.analyses WHERE name = $name;
INSERT INTO partial_correlations BY NAME SELECT * FROM incoming.partial_correlations WHERE analysis = $name;
