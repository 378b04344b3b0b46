-- The Nexmark topic as Flink reads it (bench/nexmark/compare.sh substitutes ${BROKERS},
-- ${TOPIC} and ${GROUP}). Same columns as ../source.sql; the event time is date_time, epoch
-- milliseconds, with a 4 s bounded-out-of-orderness watermark as on the clink side. The
-- topic is read from its earliest offsets up to the end offsets it had at start-up.
CREATE TABLE events (
  event_type INT,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  date_time BIGINT,
  extra STRING,
  dt AS TO_TIMESTAMP_LTZ(date_time, 3),
  WATERMARK FOR dt AS dt - INTERVAL '4' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '${TOPIC}',
  'properties.bootstrap.servers' = '${BROKERS}',
  'properties.group.id' = '${GROUP}',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);

-- The Nexmark 'bid' view: bids only.
CREATE VIEW bid AS
SELECT auction, bidder, price, channel, url, date_time, dt, extra
FROM events WHERE event_type = 2;
