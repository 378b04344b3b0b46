CREATE TABLE t (id INT, b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), s VARCHAR, t TIMESTAMP(3))
WITH (connector = 'fuzz', path = 'data/types.json', format = 'json');
SELECT id, ABS(i) AS abs_i, ROUND(d, 1) AS round_d, FLOOR(f) AS floor_f, CEIL(f) AS ceil_f,
       MOD(l, 7) AS mod_l, POWER(f, 2) AS sq, SQRT(f) AS root, i / 2 AS half, i / 0 AS by_zero,
       dec + 0.01 AS dec_plus, dec * 2 AS dec_times, ROUND(dec, 1) AS dec_round,
       -d AS neg_d, 7 % 3 AS seven_mod
FROM t
WHERE id <> 5 AND id <> 4;
