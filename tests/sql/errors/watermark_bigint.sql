-- WATERMARK FOR needs a TIMESTAMP column; the hint names both ways out
CREATE TABLE t (id INT, ts BIGINT,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH (connector = 'file', path = '../data/readings.json');
SELECT * FROM t;
