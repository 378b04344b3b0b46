-- DATE and TIME read from JSON text, printed back as Flink's text (yyyy-MM-dd, HH:mm:ss[.SSS]);
-- literals, CASTs between the kinds, TO_DATE, EXTRACT/DATE_FORMAT on a DATE and INTERVAL
-- arithmetic (a DATE by whole days stays a DATE, by hours is the DATE of the moved midnight,
-- a TIME wraps around midnight, a TIMESTAMP moves by the interval)
-- also-parallelism: 4
CREATE TABLE t (id INT, d DATE, t TIME(3), ts TIMESTAMP(3))
WITH (connector = 'file', path = 'data/dates.json', format = 'json');
SELECT id, d, t, CAST(ts AS DATE) AS ts_day, CAST(ts AS TIME(3)) AS ts_time, CAST(t AS TIME) AS t0,
       d + INTERVAL '1' DAY AS d_next, d - INTERVAL '1' HOUR AS d_back, t + INTERVAL '30' MINUTE AS t_late,
       ts + INTERVAL '1' SECOND AS ts_next, INTERVAL '2' DAY + d AS d_plus,
       CAST(d AS VARCHAR) AS d_text, CAST(d AS TIMESTAMP(3)) AS d_midnight,
       EXTRACT(DOW FROM d) AS dow, EXTRACT(MINUTE FROM t) AS minute, DATE_FORMAT(d, 'dd.MM.yyyy') AS d_fmt,
       d = DATE '2024-02-29' AS is_leap_day, d < ts AS before_ts, t > TIME '12:00:00' AS afternoon,
       TO_DATE('2024-03-05') AS td, TO_DATE('05/03/2024 10:11', 'dd/MM/yyyy HH:mm') AS td_fmt,
       TO_DATE('not a date') AS td_null, TIMESTAMPADD(HOUR, 1, d) AS d_hour, DATE_TRUNC(MONTH, d) AS d_month
FROM t;
