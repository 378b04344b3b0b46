CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT EXTRACT(FORTNIGHT FROM CAST(ts AS TIMESTAMP)) AS f FROM readings;
