-- a malformed record stops the job, naming the file and line
CREATE TABLE bad (id INT, name VARCHAR)
WITH (connector = 'fuzz', path = '../data/bad.json');
SELECT * FROM bad;
