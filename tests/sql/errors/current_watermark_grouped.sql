-- CURRENT_WATERMARK is read where the table's rows are, not over an aggregation's output
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, CURRENT_WATERMARK(ts) AS wm, COUNT(*) AS n FROM t
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND);
