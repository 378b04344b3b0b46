-- also-parallelism: 4
-- ROLLUP with the window in every grouping set: per minute, per sensor and hot/cold, per sensor, and the minute's total
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = 'data/readings.json', event_time_column = 'ts');
SELECT window_start, sensor_id, temp_c > 17 AS hot, COUNT(*) AS n, FIRST_VALUE(temp_c) AS first_t,
       GROUPING(sensor_id, temp_c > 17) AS gid
FROM readings WHERE sensor_id <> 'sensor-02'
GROUP BY TUMBLE(ts, INTERVAL '5' MINUTE), ROLLUP (sensor_id, temp_c > 17) HAVING COUNT(*) > 100;
