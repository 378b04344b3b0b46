CREATE TABLE t (id INT, ts BIGINT) WITH (connector = 'fuzz', path = '../data/types.json', format = 'json', event_time_column = 'ts');
SELECT window_start, COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, INTERVAL 'x' SECOND);
