-- also-parallelism: 4
-- The window TVF twin of time_window_offset.sql over a TIMESTAMP(3) event time with an
-- offset, selecting window_time (window_end - 1 ms, a TIMESTAMP(3)), also in HAVING
CREATE TABLE t (
  id INT,
  ts TIMESTAMP(3),
  msg VARCHAR,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (connector = 'fuzz', path = 'data/iso_times.json', format = 'json');
SELECT window_start, window_end, window_time, COUNT(*) AS n, MIN(id) AS first_id,
       MAX(ts) AS last_ts, window_time < MAX(ts) AS never
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '3' SECOND))
GROUP BY window_start, window_end, window_time
HAVING window_time > window_start;
