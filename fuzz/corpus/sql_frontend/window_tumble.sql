-- (late records at parallelism > 1 depend on when the idle source subtasks report: see
-- test_oracle.py for parallelism equality on in-order input)
-- the tutorial's shape: sensor-03 two seconds late stays in its window (lag 3 s); the two
-- records 20 s late are dropped and counted; the NULL reading counts in COUNT(*) only
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = 'data/readings.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '3000');
SELECT sensor_id, window_start, window_end, COUNT(*) AS readings, COUNT(temp_c) AS with_temp,
       AVG(temp_c) AS avg_temp_c, MIN(temp_c) AS min_temp_c, MAX(temp_c) AS max_temp_c
FROM readings
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
