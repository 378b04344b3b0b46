-- also-parallelism: 4
/* projection, aliases, WHERE with three-valued logic: the NULL row passes neither test */
CREATE TABLE t (id INT, b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), s VARCHAR, t TIMESTAMP(3))
WITH (connector = 'fuzz', path = 'data/types.json', format = 'json');
SELECT id, i + 1 AS next_i, l * 2 AS twice, s AS text
FROM t
WHERE i > 0 OR b = false;
