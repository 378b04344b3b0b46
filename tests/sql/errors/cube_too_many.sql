CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id, COUNT(*) AS n FROM readings GROUP BY CUBE (sensor_id, ts, temp_c, ts + 1, ts + 2, ts + 3, ts + 4);
