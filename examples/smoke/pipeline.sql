-- The smoke pipeline: a deterministic generator of sensor readings, ten-second event-time
-- windows per sensor, printed as newline-delimited JSON. The Kafka -> ClickHouse tutorial
-- (examples/kafka-to-clickhouse) replaces it as the main pipeline once those connectors land.
CREATE TABLE readings (
    sensor_id VARCHAR,
    ts        BIGINT,
    temp_c    DOUBLE
) WITH (
    connector = 'datagen',
    rows = '2440',
    seed = '7',
    'fields.sensor_id.kind' = 'choice',
    'fields.sensor_id.values' = 'sensor-01,sensor-02,sensor-03,sensor-04,sensor-05,sensor-06,sensor-07,sensor-08',
    'fields.ts.kind' = 'sequence',
    'fields.ts.start' = '1772352000000',
    'fields.ts.step' = '125',
    'fields.temp_c.kind' = 'random',
    'fields.temp_c.start' = '15',
    'fields.temp_c.end' = '25',
    event_time_column = 'ts',
    watermark_lag_ms = '3000'
);

SELECT sensor_id, window_start, COUNT(*) AS readings, AVG(temp_c) AS avg_temp_c,
       MIN(temp_c) AS min_temp_c, MAX(temp_c) AS max_temp_c
FROM readings
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
