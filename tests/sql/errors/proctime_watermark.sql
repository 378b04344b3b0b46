CREATE TABLE t (id INT, proc AS PROCTIME(),
  WATERMARK FOR proc AS proc - INTERVAL '1' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT id FROM t;
