-- Nexmark q17: auction statistics per day. How many bids each auction got per day and at what
-- prices. An update stream keyed by (auction, day). avg_price is the integer average, as the
-- reference's AVG over BIGINT gives.
CREATE TABLE nexmark_q17 (
  auction BIGINT,
  day BIGINT,
  total_bids BIGINT,
  rank1_bids BIGINT,
  rank2_bids BIGINT,
  rank3_bids BIGINT,
  min_price BIGINT,
  max_price BIGINT,
  avg_price BIGINT,
  sum_price BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q17
SELECT
  auction,
  date_time / 86400000 AS day,
  COUNT(*) AS total_bids,
  SUM(CASE WHEN price < 10000 THEN 1 ELSE 0 END) AS rank1_bids,
  SUM(CASE WHEN price >= 10000 AND price < 1000000 THEN 1 ELSE 0 END) AS rank2_bids,
  SUM(CASE WHEN price >= 1000000 THEN 1 ELSE 0 END) AS rank3_bids,
  MIN(price) AS min_price,
  MAX(price) AS max_price,
  SUM(price) / COUNT(*) AS avg_price,
  SUM(price) AS sum_price
FROM events WHERE event_type = 2
GROUP BY auction, date_time / 86400000;
