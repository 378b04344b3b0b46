-- The Nexmark topic as clink reads it (bench/nexmark/compare.sh substitutes ${BROKERS},
-- ${TOPIC} and ${GROUP}). Events are flat JSON objects (bench/nexmark/nexmark_gen.c); only the
-- columns the bid queries use are declared, other fields are skipped. The event time is
-- date_time, epoch milliseconds, with a 4 s watermark lag as on the Flink side. The topic is
-- read from its earliest offsets up to the end offsets it had at start-up.
CREATE TABLE events (
  event_type INT,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  date_time BIGINT,
  extra VARCHAR
) WITH (
  connector = 'kafka',
  brokers = '${BROKERS}',
  topic = '${TOPIC}',
  group_id = '${GROUP}',
  format = 'json',
  auto_offset_reset = 'earliest',
  'scan.bounded' = 'latest',
  event_time_column = 'date_time',
  watermark_lag_ms = '4000'
);
