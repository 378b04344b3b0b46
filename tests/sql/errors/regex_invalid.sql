CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT REGEXP_EXTRACT(sensor_id, 'a(b', 1) AS r FROM readings;
