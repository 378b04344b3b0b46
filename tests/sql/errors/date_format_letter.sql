CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT DATE_FORMAT(CAST(ts AS TIMESTAMP), 'yyyy-MM-dd EEE') AS d FROM readings;
