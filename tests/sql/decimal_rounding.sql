-- Every path that drops decimal digits rounds by the one rule (runtime/decimal.h): half away
-- from zero on the magnitude. x is DECIMAL(10, 3); y is read into DECIMAL(10, 1) from text
-- with two decimals (the parser rounds); i is an INT rounded to tens.
CREATE TABLE t (id INT, x DECIMAL(10, 3), y DECIMAL(10, 1), i INT)
WITH (connector = 'file', path = 'data/rounding_ties.json', format = 'json');
SELECT id, y AS parsed, ROUND(x, 0) AS r0, ROUND(x, 1) AS r1, ROUND(x, 2) AS r2,
       CAST(x AS DECIMAL(10, 1)) AS cast1, x / 3 AS third, x * CAST(0.5 AS DECIMAL(1, 1)) AS half,
       ROUND(i, -1) AS i_tens, CAST(x AS DECIMAL(38, 3)) * CAST(0.000001 AS DECIMAL(38, 37)) AS wide
FROM t;
