CREATE TABLE t (id INT, payload VARBINARY(16)) WITH (connector = 'file', path = '../data/readings.json');
SELECT id FROM t;
