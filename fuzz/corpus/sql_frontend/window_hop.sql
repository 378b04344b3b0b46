-- (late records at parallelism > 1 depend on when the idle source subtasks report: see
-- test_oracle.py for parallelism equality on in-order input)
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = 'data/readings.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '3000');
SELECT sensor_id, window_start, window_end, COUNT(*) AS n, SUM(temp_c) AS total
FROM readings
WHERE sensor_id IN ('sensor-01', 'sensor-02')
GROUP BY HOP(ts, INTERVAL '30' SECOND, INTERVAL '10' SECOND), sensor_id;
