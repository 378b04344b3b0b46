-- the password of a URI dsn (user:password@host) is masked in the excerpt, and so is the value
-- of any credential-like option (kafka.sasl.password), wherever the caret points
CREATE TABLE src (id INT) WITH (connector = 'datagen', rows = '1');
CREATE TABLE a (id INT) WITH (connector = 'postgres', dsn = 'postgresql://app:Uri-Secret-2@db:5432/x', kafka.sasl.password = 'Sasl-Secret-3', tabel = 't');
INSERT INTO a SELECT id FROM src;
