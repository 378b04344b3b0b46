-- every aggregate over integers, decimals (exact), strings; SUM of all-NULL is NULL
CREATE TABLE people (id INT, name VARCHAR, age INT, city VARCHAR, balance DECIMAL(10, 2))
WITH (connector = 'fuzz', path = 'data/people.csv', format = 'csv');
CREATE TABLE out (n BIGINT, n_age BIGINT, names BIGINT, ages BIGINT, avg_age DOUBLE,
                  total DECIMAL(38, 2), avg_balance DECIMAL(38, 6), youngest INT, last_city VARCHAR)
WITH (connector = 'print');
INSERT INTO out
SELECT COUNT(*) AS n, COUNT(age) AS n_age, COUNT(DISTINCT name) AS names, SUM(age) AS ages,
       AVG(age) AS avg_age, SUM(balance) AS total, AVG(balance) AS avg_balance,
       MIN(age) AS youngest, MAX(city) AS last_city
FROM people WHERE id > 0;
