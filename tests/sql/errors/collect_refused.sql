CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id, COLLECT(temp_c) AS temps FROM readings GROUP BY sensor_id;
