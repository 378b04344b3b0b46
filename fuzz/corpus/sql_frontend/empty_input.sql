-- a filter that matches nothing, an aggregate over nothing: no rows, no error
CREATE TABLE r (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'fuzz', path = 'data/readings.json', event_time_column = 'ts');
SELECT sensor_id, window_start, COUNT(*) AS n
FROM r WHERE temp_c > 1000
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
