-- Sample data for the compose stack: the orders of the customers in PostgreSQL
-- (compose/postgres-init.sql), joined through the gateway.
CREATE TABLE orders (
    id       integer PRIMARY KEY,
    customer integer NOT NULL,
    amount   decimal(10, 2) NOT NULL
);
INSERT INTO orders VALUES
    (10, 1, 120.00),
    (11, 1, 35.50),
    (12, 2, 99.90),
    (13, 3, 12.00);
