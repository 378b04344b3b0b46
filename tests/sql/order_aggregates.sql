-- also-parallelism: 4
-- FIRST_VALUE / LAST_VALUE / LISTAGG in arrival order (one file: per sensor the file order), APPROX_COUNT_DISTINCT; sensor-01's 1 s sessions merge into one, sensor-03's records are late (behind the watermark) and dropped
CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
WITH (connector = 'file', path = 'data/readings.json', event_time_column = 'ts');
SELECT sensor_id, window_start, window_end, FIRST_VALUE(temp_c) AS first_t, LAST_VALUE(temp_c) AS last_t,
       LISTAGG(CAST(temp_c AS VARCHAR), ' ; ') AS temps, LISTAGG(DISTINCT sensor_id) AS ids,
       APPROX_COUNT_DISTINCT(temp_c) AS distinct_t, COUNT(DISTINCT temp_c) AS exact_t
FROM readings WHERE ts < 1772352006000
GROUP BY SESSION(ts, INTERVAL '1' SECOND), sensor_id;
