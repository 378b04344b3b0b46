CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT)
WITH (connector = 'fuzz', path = '../data/readings.json', watermark_lag = '3000');
SELECT * FROM readings;
