-- Nexmark q11: user sessions. How many bids each bidder made in each session of activity
-- (a session ends after 10 s without a bid of that bidder).
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime BIGINT,
  endtime BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q11
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM events WHERE event_type = 2
GROUP BY SESSION(date_time, INTERVAL '10' SECOND), bidder;
