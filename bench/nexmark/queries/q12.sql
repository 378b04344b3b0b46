-- Nexmark q12: how many bids each bidder makes in fixed 10 s windows. The reference counts in
-- processing time (PROCTIME), which we do not have, and which no two runs would agree on;
-- here the windows are on event time.
CREATE TABLE nexmark_q12 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime BIGINT,
  endtime BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q12
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM events WHERE event_type = 2
GROUP BY TUMBLE(date_time, INTERVAL '10' SECOND), bidder;
