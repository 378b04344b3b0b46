CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT CAST(ts AS DATE) AS d FROM readings;
