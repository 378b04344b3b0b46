CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id + 1 AS x FROM readings;
