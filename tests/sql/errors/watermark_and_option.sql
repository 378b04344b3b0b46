-- WATERMARK FOR and the event_time_column option say the same thing: one of them, please
CREATE TABLE t (id INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH (connector = 'file', path = '../data/iso_times.json', event_time_column = 'ts');
SELECT * FROM t;
