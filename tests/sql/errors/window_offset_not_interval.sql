CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, COUNT(*) AS n FROM t
GROUP BY TUMBLE(ts, INTERVAL '1' DAY, 'eight hours');
