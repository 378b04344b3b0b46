CREATE TABLE balances (account VARCHAR, balance BIGINT)
WITH (connector = 'upsert-kafka', topic = 'balances');
SELECT account, SUM(balance) AS total FROM balances GROUP BY account;
