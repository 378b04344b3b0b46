-- CURRENT_WATERMARK takes the table's event-time column
CREATE TABLE t (id INT, ts TIMESTAMP(3), other TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT id, CURRENT_WATERMARK(other) AS wm FROM t;
