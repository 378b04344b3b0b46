/* a literal with 38 digits after the point would be DECIMAL(39, 38), past DECIMAL's 38 digits:
 * it is a DOUBLE, like any literal with more digits than DECIMAL holds (the planner asked for
 * 10^39, undefined behaviour, found by fuzz/sql_frontend.c); 37 digits stay an exact DECIMAL */
CREATE TABLE t (id INT) WITH (connector = 'file', path = 'data/types.json', format = 'json');
SELECT .12345678901234567890123456789012345678 AS a, 0.1234567890123456789012345678901234567 AS b FROM t WHERE id = 1;
