-- a window over a PROCTIME() column is refused: its rows would depend on when the job ran
CREATE TABLE t (id INT, ts TIMESTAMP(3), proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT window_start, COUNT(*) AS n FROM t
GROUP BY TUMBLE(proc, INTERVAL '1' MINUTE);
