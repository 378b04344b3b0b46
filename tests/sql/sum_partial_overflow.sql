-- also-parallelism: 3
-- SUM adds up exactly and checks the total when the window fires: a partial sum past BIGINT
-- (or DOUBLE) is no error when the total fits, whatever the arrival order or parallelism
CREATE TABLE t (k VARCHAR, ts BIGINT, l BIGINT, d DOUBLE)
WITH (connector = 'file', path = 'data/big_sums.json', format = 'json', event_time_column = 'ts');
SELECT k, SUM(l) AS sum_l, AVG(l) AS avg_l, SUM(d) AS sum_d, AVG(d) AS avg_d
FROM t
GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
