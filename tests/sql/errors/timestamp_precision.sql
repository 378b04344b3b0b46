-- a TIMESTAMP precision past 9 is refused at its position; 0 to 9 parse (milliseconds are kept)
CREATE TABLE t (a TIMESTAMP(0), b TIMESTAMP(9), c TIMESTAMP_LTZ(6), d TIMESTAMP(12))
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT * FROM t;
