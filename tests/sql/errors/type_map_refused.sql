CREATE TABLE t (id INT, attrs MAP<VARCHAR, INT>) WITH (connector = 'file', path = '../data/readings.json');
SELECT id FROM t;
