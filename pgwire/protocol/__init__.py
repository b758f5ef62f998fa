"""The PostgreSQL v3 protocol: messages, the server side's decoder and encoder, the client
side (`client`), and the walks over a source's answer (`answer_walks`, compiled by Cython
when built: its build is chosen here, before it is imported; see `pgwire.compiled`)."""

from pgwire.compiled import compiled_module

# FEDGATE_ROW_WALK=python runs the walks interpreted even when they are compiled (the tests
# run the relay both ways; also the way out should a build misbehave); =c insists on the
# compiled build (an ImportError when it is not built); unset: compiled when built.
ROW_WALK_ENV = "FEDGATE_ROW_WALK"
compiled_module("pgwire.protocol.answer_walks", ROW_WALK_ENV)
