"""The express lane: relayed statements answered from the sockets' callbacks.

A statement of one PostgreSQL source (`gateway.relay.routing`) costs little on the source, and
on the session's task it costs two task wake-ups and a dozen awaits per statement: more
than the source's own work for pgbench's point queries. The lane does the same work in
the transports' callbacks instead. The client's bytes arrive (`ClientPort`), the route
comes from the router's cache, the bytes go to the session's link, and the link's
callback (`LinkPort`) passes the source's answer to the client as it arrives.

What the lane takes, all on a link the session already has, idle:
- a simple Query of one statement that the session would relay (not COPY, not DDL);
- an extended-protocol run `[Parse] Bind [Describe] Execute Sync` of a relayed statement
  (unnamed portal, no row limit), where the Parse repeats one the session relayed.
Everything else (the first statement on a link, planner queries, SET, COPY, a
statement_timeout to enforce, errors of our own, half-received messages) goes to the
session's task exactly as before, and in order: the lane acts only while the task waits
for input with nothing buffered, and holds what arrives while its exchange is in flight.
Each step mirrors the session's own (`Session.run_statements`, `on_parse`, `on_bind`,
`on_execute`, `on_sync`; `SessionLinks.simple`/`execute`), so answers, transaction
states and errors are the same on both roads; `SET fedgate.express = off` takes the
task's road only.

    client ──Q──▶ ClientPort.data_received ─▶ lane.offer ─▶ link transport.write
    client ◀─rows── session.write ◀─ Exchange.pump ◀─ LinkPort.data_received ◀── source

The lane's modules, from the top (each imports only modules listed below it):
- `taking`: `ExpressLane`, which the connection builds with the session's state, links
  and client port; it decides what a chunk of client bytes starts, if anything;
- `memory`: `RememberingLane`, the lane's memory of what it relayed, so that a repeat costs one
  lookup (the repeats' Python road);
- `lane`: `Lane`, the machinery: the entry points the client's socket calls, the link a
  route may use now, finishing a statement as the session's task does;
- `place_in_line`: the lane's place in a pool's line for a link (transaction pooling);
- `exchange`: one exchange with a link, driven by the link's socket callback;
- `kept`: makes what the memory keeps of a statement (`KeptQuery`, `KeptRun`: the
  repeats' classes, typed fields when compiled);
- `text_split`: the split of a simple Query's text into statement, shape and numbers;
- `repeats`, `repeats_flight`: the repeats, a remembered statement in and out in one
  call each way (compiled when built);
- `statement_bytes`: the walks over a statement's bytes (compiled when built).

The compiled modules' build is chosen here, before any of them is imported (see
`pgwire.compiled`).
"""

from pgwire.compiled import compiled_module

# FEDGATE_EXPRESS=python runs the lane's compiled modules interpreted even when they are
# built, the lane's repeats included (the tests run the lane both ways); =c
# insists on the compiled builds (an ImportError when one is not built); unset: compiled
# when built.
EXPRESS_BUILD_ENV = "FEDGATE_EXPRESS"
compiled_module("gateway.relay.express.statement_bytes", EXPRESS_BUILD_ENV)
compiled_module("gateway.relay.express.repeats_flight", EXPRESS_BUILD_ENV)
compiled_module("gateway.relay.express.repeats", EXPRESS_BUILD_ENV)
