-- a DOUBLE result past the type's range stops the job like integer overflow does, naming the
-- operation and its values (no Infinity ever reaches a sink)
CREATE TABLE t (id INT, d DOUBLE)
WITH (connector = 'file', path = '../data/types.json', format = 'json');
SELECT id, d * 1e300 AS big FROM t;
