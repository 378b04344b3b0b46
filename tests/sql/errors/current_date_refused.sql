CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id FROM readings WHERE CAST(CAST(ts AS TIMESTAMP) AS DATE) = CURRENT_DATE;
