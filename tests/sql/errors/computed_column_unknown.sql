-- a computed column reads the physical columns; a typo is named at its position
CREATE TABLE t (id INT, ts_text VARCHAR, rowtime AS CAST(ts_txt AS TIMESTAMP(3)))
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT id, rowtime FROM t;
