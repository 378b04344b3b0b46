-- Nexmark q0: pass-through. Measures the cost of reading and decoding the bids.
CREATE TABLE nexmark_q0 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time BIGINT,
  extra STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, date_time, extra FROM bid;
