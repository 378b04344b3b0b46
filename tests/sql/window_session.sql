-- sessions close after a 5 s gap; the clicks arrive out of order within the lag (u1's 6500 comes
-- while the watermark is 2000, so it bridges [1000, 8000) and [9000, 17000); after u2's 20000
-- the watermark is 10000 and the first session would have fired already)
CREATE TABLE clicks (user_id VARCHAR, ts BIGINT, page VARCHAR)
WITH (connector = 'file', path = 'data/clicks.json', event_time_column = 'ts',
      watermark_lag_ms = '10000');
SELECT user_id, window_start, window_end, COUNT(*) AS clicks, COUNT(DISTINCT page) AS pages
FROM clicks
GROUP BY SESSION(ts, INTERVAL '5' SECOND), user_id;
