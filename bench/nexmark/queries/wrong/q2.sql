-- A deliberately wrong q2 (every 124th auction instead of every 123rd), for testing the
-- correctness gate: `compare.sh --wrong-query q2` must report a difference, not a ratio.
CREATE TABLE nexmark_q2 (
  auction BIGINT,
  price BIGINT
) WITH (${SINK});

INSERT INTO nexmark_q2
SELECT auction, price FROM events WHERE event_type = 2 AND MOD(auction, 124) = 0;
