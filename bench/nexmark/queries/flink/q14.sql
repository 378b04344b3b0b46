-- Nexmark q14: calculation, as the reference writes it (HOUR of the UTC event time); the
-- count_char UDF as a length difference.
CREATE TABLE nexmark_q14 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  bid_time_type STRING,
  date_time BIGINT,
  extra STRING,
  c_counts BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q14
SELECT
  auction,
  bidder,
  0.908 * price AS price,
  CASE
    WHEN HOUR(dt) >= 8 AND HOUR(dt) <= 18 THEN 'dayTime'
    WHEN HOUR(dt) <= 6 OR HOUR(dt) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bid_time_type,
  date_time,
  extra,
  CAST(CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS BIGINT) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
