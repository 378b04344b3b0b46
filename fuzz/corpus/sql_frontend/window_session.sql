-- sessions close after a 5 s gap; the clicks arrive out of order within the lag
CREATE TABLE clicks (user_id VARCHAR, ts BIGINT, page VARCHAR)
WITH (connector = 'fuzz', path = 'data/clicks.json', event_time_column = 'ts',
      watermark_lag_ms = '10000');
SELECT user_id, window_start, window_end, COUNT(*) AS clicks, COUNT(DISTINCT page) AS pages
FROM clicks
GROUP BY SESSION(ts, INTERVAL '5' SECOND), user_id;
