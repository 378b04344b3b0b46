CREATE TABLE orders (id BIGINT, amount BIGINT)
WITH (connector = 'file', path = '../data/types.json', format = 'debezium-json');
SELECT id, SUM(amount) AS total FROM orders GROUP BY id;
