-- ordered
-- an unwindowed GROUP BY is an update stream: each change is a row with its kind. The three
-- files are read in name order, one batch each: Ada and Grace appear (insert), Grace's second
-- row updates hers and Linus appears; then Ada's and Linus's second rows make COUNT(*) reach 2,
-- so the HAVING that held stops holding and their rows are deleted.
CREATE TABLE people (id INT, name VARCHAR, age INT, city VARCHAR, balance DECIMAL(10, 2))
WITH (connector = 'fuzz', path = 'data/people-*.csv', format = 'csv');
SELECT name, COUNT(*) AS n, SUM(balance) AS total, MIN(city) AS first_city
FROM people
GROUP BY name
HAVING COUNT(*) < 2 OR MAX(age) < 40;
