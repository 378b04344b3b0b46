CREATE TABLE t (id INT) WITH (connector = 'fuzz', path = '../data/types.json', format = 'json');
SELECT id * 1e999 AS huge FROM t;
