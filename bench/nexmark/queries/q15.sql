-- Nexmark q15: bidding statistics per day. How many bids, bidders and auctions there were per
-- price range. An update stream: one row per day, updated as bids arrive. The day is counted
-- in days since 1970-01-01 UTC (we have no DATE_FORMAT); the reference's FILTER clauses are
-- CASE expressions (COUNT(DISTINCT x) skips the NULL that CASE gives outside the range).
CREATE TABLE nexmark_q15 (
  day BIGINT,
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

INSERT INTO nexmark_q15
SELECT
  date_time / 86400000 AS day,
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
GROUP BY date_time / 86400000;
