-- a timestamp that does not parse stops the job naming the column, the value and the line
CREATE TABLE t (id INT, ts TIMESTAMP(3))
WITH (connector = 'file', path = '../data/bad_times.json');
SELECT * FROM t;
