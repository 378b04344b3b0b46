-- The HOP window table function takes the slide before the size (Flink's order, unlike clink's
-- GROUP BY HOP); one written size first is refused with the order named
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, COUNT(*) AS n
FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;
