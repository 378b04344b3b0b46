CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT DATE '2026-02-29' AS d FROM readings;
