/* a 34-digit literal compared with a DECIMAL of scale 13: rescaling it to the common type
 * overflowed 128 bits while the planner folded it (undefined behaviour, found by
 * fuzz/sql_frontend.c); now it is cast at run time, which fails with the value named */
CREATE TABLE t (id INT) WITH (connector = 'file', path = '../data/types.json', format = 'json');
SELECT 1.5789012345673 = 6789012345678901234567890123456789 AS a FROM t WHERE id = 1;
