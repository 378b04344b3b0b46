-- ordered
/* a minus folded into a literal that already has one: -(-1) is 1, not 0 (issue 12, 9.1);
 * the extremes of BIGINT, and one past them, which is DECIMAL(19, 0) */
CREATE TABLE t (id INT) WITH (connector = 'file', path = 'data/types.json', format = 'json');
SELECT -(-1) AS a, - -3 AS b, -(-(2)) AS c, -(-9223372036854775807) AS d, (-(-1)) = 1 AS e,
       -(-1.5) AS f, - - -4 AS g, -(-(-(-0.25))) AS h, -(-1e3) AS i,
       -9223372036854775808 AS j, 9223372036854775808 AS k, -(-9223372036854775808) AS l,
       9223372036854775807 + 0 AS m, -2147483648 AS n
FROM t WHERE id = 1;
