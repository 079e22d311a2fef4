-- LAMBADA accuracy per checkpoint, one column per Pythia size (the demo's query).
SELECT * FROM (
    PIVOT (
        SELECT r.size, s.step, round(s.value, 3) AS acc
        FROM scores s JOIN runs r USING (run)
        WHERE r.family = 'pythia' AND s.task = 'lambada_openai' AND s.metric = 'acc'
    )
    ON size IN ('160m', '410m', '1.4b')
    USING first(acc)
)
ORDER BY step;
