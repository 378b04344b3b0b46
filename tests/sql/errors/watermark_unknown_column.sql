CREATE TABLE t (id INT, rowtime TIMESTAMP(3),
  WATERMARK FOR row_time AS row_time - INTERVAL '5' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT * FROM t;
