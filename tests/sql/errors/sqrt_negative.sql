-- SQRT of a negative number has no real result: an error, not NaN and not NULL
CREATE TABLE t (id INT, f FLOAT)
WITH (connector = 'file', path = '../data/types.json', format = 'json');
SELECT id, SQRT(f) AS root FROM t;
