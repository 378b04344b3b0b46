-- ordered
-- Time as Flink DDL declares it: a TIMESTAMP(3) column read from ISO 8601 / SQL text (zones,
-- 'T' or a blank, fraction digits past the millisecond truncated) and epoch numbers, computed
-- columns over the physical ones, and TIMESTAMP_LTZ values (CAST relabels) written with a Z. The PROCTIME()
-- column is declared but not selected, so the output stays a function of the input.
CREATE TABLE t (
  id INT,
  ts TIMESTAMP(3),
  msg VARCHAR,
  parsed AS CAST(msg AS TIMESTAMP(3)),
  instant AS CAST(CAST(ts AS BIGINT) + 1 AS TIMESTAMP_LTZ(3)),
  proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (connector = 'file', path = 'data/iso_times.json', format = 'json');
SELECT id, ts, parsed, instant, CAST(ts AS TIMESTAMP_LTZ(3)) AS ts_ltz, proc IS NOT NULL AS has_proc FROM t;
