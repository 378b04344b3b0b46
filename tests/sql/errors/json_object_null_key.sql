CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT JSON_OBJECT(KEY NULL VALUE sensor_id) AS j FROM readings;
