"""The relay: statements that live in one PostgreSQL source go to it over the gateway's own
links (`routing`, `links`, `pool`; numbers lifted into parameters, `literals`, by the
statement's shape, `shapes`), and the express lane (`gateway.relay.express`) takes what
it can on a shorter road."""
