-- The window TVF twin of window_cumulate.sql: CUMULATE(TABLE t, DESCRIPTOR(ts), step, size)
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = 'data/readings.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '3000');
SELECT window_start, window_end, COUNT(*) AS n, MAX(temp_c) AS hottest
FROM TABLE(CUMULATE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '30' SECOND))
WHERE sensor_id = 'sensor-04'
GROUP BY window_start, window_end;
