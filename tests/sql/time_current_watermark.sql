-- ordered
-- CURRENT_WATERMARK(ts) is the watermark each row arrived under (the largest event time before
-- it less the 5 s delay), NULL before the first; Flink's way to filter late rows keeps all but
-- record 6, which is behind the watermark.
CREATE TABLE t (id INT, ts TIMESTAMP(3), msg VARCHAR,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH (connector = 'file', path = 'data/iso_times.json', format = 'json');
SELECT id, ts, CURRENT_WATERMARK(ts) AS wm FROM t
WHERE CURRENT_WATERMARK(ts) IS NULL OR ts > CURRENT_WATERMARK(ts);
