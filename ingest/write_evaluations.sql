-- One evaluations row per results file of the batch (ids reserved beforehand).
INSERT INTO evaluations BY NAME
SELECT * EXCLUDE (base_model, checkpoint_model, revision)
FROM new_evaluations;
