-- Set the campaign of evaluation $evaluation_id, stored before ood-store kept campaigns.
UPDATE evaluations SET campaign = $campaign WHERE evaluation_id = $evaluation_id AND campaign IS NULL
