CREATE TABLE t (id INT, tags ARRAY<VARCHAR>) WITH (connector = 'file', path = '../data/readings.json');
SELECT id FROM t;
