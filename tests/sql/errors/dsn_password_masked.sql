-- a dsn holds its password in key=value form (libpq) or as user:password@ in a URI; an error
-- pointing at that line shows it masked, the caret still under the token at fault
CREATE TABLE src (id INT) WITH (connector = 'datagen', rows = '1');
CREATE TABLE a (id INT) WITH (connector = 'postgres', dsn = 'host=db user=app password=Kv-Secret-1 dbname=x', table = 't', bogus = 'x');
INSERT INTO a SELECT id FROM src;
