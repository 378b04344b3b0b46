-- also-parallelism: 2
-- Flink's usual DDL: event time computed from a text field with TO_TIMESTAMP and a pattern,
-- WATERMARK FOR on the computed column, a window over it (record 4 is 3 s behind, within the
-- 5 s delay: counted)
CREATE TABLE t (id INT, ts_text VARCHAR,
  rowtime AS TO_TIMESTAMP(ts_text, 'yyyy/MM/dd HH:mm:ss'),
  WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND)
WITH (connector = 'file', path = 'data/ts_text.json', format = 'json');
SELECT window_start, window_end, COUNT(*) AS n, MAX(id) AS last_id
FROM t GROUP BY TUMBLE(rowtime, INTERVAL '10' SECOND);
