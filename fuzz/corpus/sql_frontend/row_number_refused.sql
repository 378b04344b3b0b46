-- Top-N and deduplication (ROW_NUMBER() OVER) are refused by name, not as any OVER window
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = '../data/readings.json', event_time_column = 'ts');
SELECT sensor_id, temp_c, ROW_NUMBER() OVER (PARTITION BY sensor_id ORDER BY temp_c DESC) AS rn
FROM readings;
