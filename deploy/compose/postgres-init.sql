-- Sample data for the compose stack: customers in PostgreSQL, their orders in MariaDB
-- (compose/mariadb-init.sql), joined through the gateway.
CREATE TABLE customers (
    id      integer PRIMARY KEY,
    name    text NOT NULL,
    country text NOT NULL
);
INSERT INTO customers VALUES
    (1, 'Ada', 'UK'),
    (2, 'Grace', 'US'),
    (3, 'Edsger', 'NL');
