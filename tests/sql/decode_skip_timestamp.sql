-- with on_decode_error = 'skip' a timestamp that does not parse is skipped (and counted) like
-- any undecodable record, and the rest flows
CREATE TABLE t (id INT, ts TIMESTAMP(3))
WITH (connector = 'file', path = 'data/bad_times.json', on_decode_error = 'skip');
SELECT * FROM t;
