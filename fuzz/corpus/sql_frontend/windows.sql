CREATE TABLE t (id INT, ts BIGINT) WITH (connector = 'fuzz', event_time_column = 'ts', watermark_lag_ms = '10');
CREATE TABLE o (k INT, n BIGINT) WITH (connector = 'fuzz');
INSERT INTO o SELECT id AS k, COUNT(*) AS n FROM t GROUP BY HOP(ts, INTERVAL '10' SECOND, INTERVAL '1' SECOND), id HAVING COUNT(DISTINCT id) > 1;
