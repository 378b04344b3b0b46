CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT EXTRACT(YEAR FROM TIME '08:00:00') AS y FROM readings;
