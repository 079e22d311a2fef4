-- 0004_partial_correlation_notes: a note on rows whose statistics are finite but were computed with less
-- than was asked for (a GAM basis shrunk to the distinct in-domain values, or a straight line in its place).
ALTER TABLE partial_correlations ADD COLUMN note VARCHAR;
