CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id, FIRST_VALUE(temp_c, ts) AS f FROM readings GROUP BY sensor_id;
