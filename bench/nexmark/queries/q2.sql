-- Nexmark q2: selection. The bids on every 123rd auction.
CREATE TABLE nexmark_q2 (
  auction BIGINT,
  price BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q2
SELECT auction, price FROM events WHERE event_type = 2 AND MOD(auction, 123) = 0;
