-- The scores of a batch of evaluations, from the registered frame `new_scores`.
INSERT INTO evaluation_scores BY NAME
SELECT * FROM new_scores;
