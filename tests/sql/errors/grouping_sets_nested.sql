CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id, COUNT(*) AS n FROM readings GROUP BY GROUPING SETS ((sensor_id), ROLLUP (ts));
