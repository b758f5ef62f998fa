"""The relay: statements that live in one PostgreSQL source go to it over the gateway's own
links, and the express lane takes what it relayed before on a shorter road. Its walks over
a statement's bytes (`statement_bytes`) are compiled by Cython when built: their build is
chosen here, before they are imported (see `pgwire.compiled`)."""

from pgwire.compiled import compiled_module

# FEDGATE_HOT_SPLIT=python runs the lane's compiled modules interpreted even when they are
# built, the lane's repeats included (the tests run the lane both ways); =c
# insists on the compiled builds (an ImportError when one is not built); unset: compiled
# when built.
HOT_SPLIT_ENV = "FEDGATE_HOT_SPLIT"
compiled_module("gateway.relay.statement_bytes", HOT_SPLIT_ENV)
compiled_module("gateway.relay.repeats_flight", HOT_SPLIT_ENV)
compiled_module("gateway.relay.repeats", HOT_SPLIT_ENV)
