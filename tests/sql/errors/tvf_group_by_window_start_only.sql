-- A window aggregation over a TVF groups by both window bounds, as in Flink
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, id;
