CREATE TABLE readings (sensor_id VARCHAR) WITH (connector = 'fiel');
SELECT * FROM readings;
