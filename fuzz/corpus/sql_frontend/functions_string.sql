CREATE TABLE t (id INT, b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), s VARCHAR, t TIMESTAMP(3))
WITH (connector = 'fuzz', path = 'data/types.json', format = 'json');
SELECT id, UPPER(s) AS up, LOWER(s) AS lo, CHAR_LENGTH(s) AS n, SUBSTRING(s, 2, 3) AS sub,
       SUBSTRING(s FROM 3) AS tail, CONCAT(s, '!', 'x') AS cat, s || '?' AS pipe,
       TRIM(s) AS trimmed, REPLACE(s, 'l', 'L') AS repl, SPLIT_INDEX(s, ',', 1) AS second,
       s LIKE '%o%' AS has_o, s NOT LIKE '_%' AS empty_like
FROM t;
