CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT CAST(ts AS TIMESTAMP) > TIME '08:00:00' AS late FROM readings;
