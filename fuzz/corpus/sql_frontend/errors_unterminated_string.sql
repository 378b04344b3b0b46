CREATE TABLE readings (sensor_id VARCHAR)
WITH (connector = 'fuzz', path = 'oops);
