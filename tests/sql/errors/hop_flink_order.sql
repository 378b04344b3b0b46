-- Flink's GROUP BY HOP writes the slide before the size; clink's takes the size first, and the
-- refusal of a Flink-ordered HOP says so
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, COUNT(*) AS n FROM t
GROUP BY HOP(ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE);
