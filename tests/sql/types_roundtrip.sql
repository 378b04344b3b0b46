-- every type read from JSON and printed back: integers, doubles in shortest form, decimals at
-- their scale, escaped strings, timestamps as SQL text (yyyy-MM-dd HH:mm:ss.SSS), NULLs as null
CREATE TABLE t (id INT, b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), s VARCHAR, t TIMESTAMP(3))
WITH (connector = 'file', path = 'data/types.json', format = 'json');
SELECT * FROM t;
