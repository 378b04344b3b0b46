-- DATE and TIME(3) read from CSV text (an empty field is NULL) and printed back
CREATE TABLE t (id INT, d DATE, t TIME(3))
WITH (connector = 'file', path = 'data/dates.csv', format = 'csv', 'csv.header' = 'true');
SELECT id, d, t, d + INTERVAL '1' DAY AS next_day FROM t;
