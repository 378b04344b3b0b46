CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = '../data/readings.json', event_time_column = 'ts');
SELECT a.sensor_id FROM readings a JOIN readings b ON a.ts = b.ts;
