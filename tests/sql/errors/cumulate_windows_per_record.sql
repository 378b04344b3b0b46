CREATE TABLE t (id INT, ts BIGINT) WITH (connector = 'file', path = '../data/types.json', format = 'json', event_time_column = 'ts');
SELECT window_start, window_end, COUNT(*) AS n FROM t GROUP BY CUMULATE(ts, INTERVAL '1' SECOND, INTERVAL '1' DAY);
