CREATE TABLE readings (sensor_id VARCHAR)
WITH (connector = 'file', path = 'oops);
