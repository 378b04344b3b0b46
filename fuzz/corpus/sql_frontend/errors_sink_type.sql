CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = '../data/readings.json', event_time_column = 'ts');
CREATE TABLE out (sensor_id BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT sensor_id FROM readings;
