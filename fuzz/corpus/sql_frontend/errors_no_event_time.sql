CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = '../data/readings.json');
SELECT sensor_id, COUNT(*) AS n FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
