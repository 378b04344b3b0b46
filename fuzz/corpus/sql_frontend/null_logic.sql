-- AND / OR / NOT truth tables over NULL, IS [NOT] NULL, IS TRUE / IS FALSE, COALESCE, NULLIF
CREATE TABLE t (id INT, b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), s VARCHAR, t TIMESTAMP(3))
WITH (connector = 'fuzz', path = 'data/types.json', format = 'json');
SELECT id,
       b AND true AS b_and_t, b AND false AS b_and_f, b OR true AS b_or_t, b OR false AS b_or_f,
       NOT b AS not_b, b IS NULL AS b_null, b IS NOT NULL AS b_not_null,
       b IS TRUE AS b_true, b IS NOT FALSE AS b_not_false,
       COALESCE(i, -1) AS i_or, NULLIF(i, 0) AS i_nullif, i = NULL AS eq_null
FROM t;
