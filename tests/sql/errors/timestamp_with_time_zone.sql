-- TIMESTAMP WITH TIME ZONE is refused by name, pointing at TIMESTAMP_LTZ
CREATE TABLE t (a TIMESTAMP(3) WITH LOCAL TIME ZONE, b TIMESTAMP WITH TIME ZONE)
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT * FROM t;
