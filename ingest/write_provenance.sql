-- Record the source format and campaign of the evaluations in the registered frame `new_provenance`
-- (only those of other formats than lm-eval, or with a campaign: the columns' defaults stand otherwise).
UPDATE evaluations
SET source_format = p.source_format, campaign = p.campaign
FROM new_provenance p
WHERE evaluations.evaluation_id = p.evaluation_id
