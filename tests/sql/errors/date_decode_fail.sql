CREATE TABLE t (id INT, d DATE) WITH (connector = 'file', path = '../data/dates_bad.json', format = 'json');
SELECT id, d FROM t;
