"""What the gateway's layers share, below all of them: the server's context
(`context.ServerContext`) and a client session's state (`session.SessionState`, with its
settings, statements, portals, routes and pg_stat_activity notes). No I/O of its own
beyond the session's output buffer; it imports nothing of the gateway above it.
"""
