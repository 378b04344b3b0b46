-- Nexmark q14: calculation. Converts prices, classifies each bid by the hour of day (UTC) and
-- counts the 'c's of its extra field; keeps bids of 1 to 50 million (euro cents). The
-- reference's count_char UDF is written as a length difference; HOUR(t) as arithmetic.
CREATE TABLE nexmark_q14 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  bid_time_type VARCHAR,
  date_time BIGINT,
  extra VARCHAR,
  c_counts BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q14
SELECT
  auction,
  bidder,
  0.908 * price AS price,
  CASE
    WHEN MOD(date_time / 3600000, 24) >= 8 AND MOD(date_time / 3600000, 24) <= 18 THEN 'dayTime'
    WHEN MOD(date_time / 3600000, 24) <= 6 OR MOD(date_time / 3600000, 24) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bid_time_type,
  date_time,
  extra,
  CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts
FROM events
WHERE event_type = 2 AND 0.908 * price > 1000000 AND 0.908 * price < 50000000;
