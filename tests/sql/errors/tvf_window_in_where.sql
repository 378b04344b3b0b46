-- WHERE reads the table's rows, before windows exist: a window column there is refused with
-- HAVING as the hint (Flink filters the TVF's rows; clink plans the TVF as a GROUP BY window)
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
WHERE id > 1 AND window_end > CAST('2026-03-01 08:00:00' AS TIMESTAMP(3))
GROUP BY window_start, window_end;
