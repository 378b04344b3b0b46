-- The window TVF twin of window_hop.sql: Flink's HOP TVF takes the slide before the size
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = 'data/readings.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '3000');
SELECT sensor_id, window_start, window_end, COUNT(*) AS n, SUM(temp_c) AS total
FROM TABLE(
  HOP(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '30' SECOND)) AS w
WHERE sensor_id IN ('sensor-01', 'sensor-02')
GROUP BY w.window_start, w.window_end, sensor_id;
