CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT UPPER(sensor_id) FILTER (WHERE temp_c > 20) AS u FROM readings;
