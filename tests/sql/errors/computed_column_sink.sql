-- a table with computed columns is a source: writing into it is refused
CREATE TABLE src (id INT, ts TIMESTAMP(3)) WITH (connector = 'file', path = '../data/iso_times.json');
CREATE TABLE snk (id INT, twice AS id * 2) WITH (connector = 'print');
INSERT INTO snk SELECT id FROM src;
