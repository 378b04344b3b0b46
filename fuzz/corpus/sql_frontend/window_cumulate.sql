CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = 'data/readings.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '3000');
SELECT window_start, window_end, COUNT(*) AS n, MAX(temp_c) AS hottest
FROM readings
WHERE sensor_id = 'sensor-04'
GROUP BY CUMULATE(ts, INTERVAL '10' SECOND, INTERVAL '30' SECOND);
