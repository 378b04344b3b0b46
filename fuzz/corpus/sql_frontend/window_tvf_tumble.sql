-- The window TVF twin of window_tumble.sql, as Flink 1.13+ writes it: the same rows
-- (window_time, Flink's window_end - 1 ms, besides)
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = 'data/readings.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '3000');
SELECT sensor_id, window_start, window_end, COUNT(*) AS readings, COUNT(temp_c) AS with_temp,
       AVG(temp_c) AS avg_temp_c, MIN(temp_c) AS min_temp_c, MAX(temp_c) AS max_temp_c
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, sensor_id;
