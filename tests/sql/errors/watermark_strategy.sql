-- a watermark strategy other than "column less a fixed delay" is refused by name
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts + INTERVAL '5' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT * FROM t;
