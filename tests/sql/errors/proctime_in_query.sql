-- processing time only where a table declares it: PROCTIME() in a query is refused
CREATE TABLE t (id INT, ts TIMESTAMP(3))
WITH (connector = 'file', path = '../data/iso_times.json');
SELECT id, PROCTIME() AS now FROM t;
