-- with on_decode_error = 'skip' the bad record is counted and the rest flows
CREATE TABLE bad (id INT, name VARCHAR)
WITH (connector = 'fuzz', path = 'data/bad.json', on_decode_error = 'skip');
SELECT * FROM bad;
