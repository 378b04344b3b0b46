CREATE TABLE t (id INT, payload BYTES) WITH (connector = 'file', path = '../data/readings.json');
SELECT id FROM t;
