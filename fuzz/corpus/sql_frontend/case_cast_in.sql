CREATE TABLE t (id INT, b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), s VARCHAR, t TIMESTAMP(3))
WITH (connector = 'fuzz', path = 'data/types.json', format = 'json');
SELECT id,
       CASE WHEN i > 0 THEN 'pos' WHEN i < 0 THEN 'neg' ELSE 'zero or null' END AS sign,
       CASE id WHEN 1 THEN 'one' WHEN 2 THEN 'two' END AS name,
       CAST(i AS BIGINT) AS i64, CAST(d AS VARCHAR) AS d_text, CAST(dec AS DOUBLE) AS dec_d,
       CAST(id AS DECIMAL(5, 1)) AS id_dec, CAST('42' AS INT) AS parsed, CAST(t AS BIGINT) AS t_ms,
       id IN (1, 3, 5) AS odd, id NOT IN (2, 4) AS not_even, i IN (1, NULL) AS in_null,
       id BETWEEN 2 AND 4 AS mid
FROM t;
