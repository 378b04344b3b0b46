CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT JSON_ARRAY(sensor_id RETURNING VARCHAR) AS j FROM readings;
