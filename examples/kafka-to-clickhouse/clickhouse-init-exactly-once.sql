-- The exactly-once variant (GUARANTEE=exactly_once ./run.sh): a plain MergeTree, which
-- collapses nothing, so a window written twice would show as two rows.
CREATE TABLE IF NOT EXISTS sensor_window_stats (
    sensor_id       String,
    window_start    Int64,
    window_end      Int64,
    readings        Int64,
    avg_temp_c      Float64,
    min_temp_c      Float64,
    max_temp_c      Float64,
    window_start_ts DateTime ALIAS toDateTime(intDiv(window_start, 1000), 'UTC')
) ENGINE = MergeTree()
ORDER BY (sensor_id, window_start)
