-- Sets the model and revision of checkpoint ($run, $step).
UPDATE checkpoints SET model = $model, revision = $revision
WHERE run = $run AND step IS NOT DISTINCT FROM $step
