-- an error that points at a line holding a password shows the line with the password masked
CREATE TABLE src (id INT) WITH (connector = 'datagen', rows = '1');
CREATE TABLE out (id INT) WITH (connector = 'clickhouse', table = 't', password = 'hunter22', bogus = 'x');
INSERT INTO out SELECT id FROM src;
