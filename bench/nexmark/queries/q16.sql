-- Nexmark q16: channel statistics per day. q15 per channel, plus the latest minute of the day
-- (minutes since midnight UTC) a bid came in. An update stream keyed by (channel, day).
CREATE TABLE nexmark_q16 (
  channel VARCHAR,
  day BIGINT,
  minute BIGINT,
  total_bids BIGINT,
  rank1_bids BIGINT,
  rank2_bids BIGINT,
  rank3_bids BIGINT,
  total_bidders BIGINT,
  rank1_bidders BIGINT,
  rank2_bidders BIGINT,
  rank3_bidders BIGINT,
  total_auctions BIGINT,
  rank1_auctions BIGINT,
  rank2_auctions BIGINT,
  rank3_auctions BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q16
SELECT
  channel,
  date_time / 86400000 AS day,
  MAX(MOD(date_time, 86400000) / 60000) AS minute,
  COUNT(*) AS total_bids,
  SUM(CASE WHEN price < 10000 THEN 1 ELSE 0 END) AS rank1_bids,
  SUM(CASE WHEN price >= 10000 AND price < 1000000 THEN 1 ELSE 0 END) AS rank2_bids,
  SUM(CASE WHEN price >= 1000000 THEN 1 ELSE 0 END) AS rank3_bids,
  COUNT(DISTINCT bidder) AS total_bidders,
  COUNT(DISTINCT CASE WHEN price < 10000 THEN bidder END) AS rank1_bidders,
  COUNT(DISTINCT CASE WHEN price >= 10000 AND price < 1000000 THEN bidder END) AS rank2_bidders,
  COUNT(DISTINCT CASE WHEN price >= 1000000 THEN bidder END) AS rank3_bidders,
  COUNT(DISTINCT auction) AS total_auctions,
  COUNT(DISTINCT CASE WHEN price < 10000 THEN auction END) AS rank1_auctions,
  COUNT(DISTINCT CASE WHEN price >= 10000 AND price < 1000000 THEN auction END) AS rank2_auctions,
  COUNT(DISTINCT CASE WHEN price >= 1000000 THEN auction END) AS rank3_auctions
FROM events WHERE event_type = 2
GROUP BY channel, date_time / 86400000;
