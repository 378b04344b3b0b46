-- also-parallelism: 4
-- Windows over a TIMESTAMP(3) event-time column declared with WATERMARK FOR: the bounds are
-- TIMESTAMP text, the windows start at the offset (3 s) past each 10 s, and record 6 (14 s
-- behind the largest time seen, the delay being 5 s) is late and dropped.
CREATE TABLE t (
  id INT,
  ts TIMESTAMP(3),
  msg VARCHAR,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (connector = 'file', path = 'data/iso_times.json', format = 'json');
SELECT window_start, window_end, COUNT(*) AS n, MIN(id) AS first_id, MAX(ts) AS last_ts
FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND, INTERVAL '3' SECOND);
