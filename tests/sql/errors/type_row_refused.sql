CREATE TABLE t (id INT, pos ROW<x DOUBLE, y DOUBLE>) WITH (connector = 'file', path = '../data/readings.json');
SELECT id FROM t;
