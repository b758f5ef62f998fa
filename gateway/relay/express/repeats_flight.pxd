# The C types of repeats_flight.py's names when Cython compiles it (see its docstring): the
# repeats' state is the typed fields of `Flight`, which gateway.relay.express.repeats builds on.
cimport cython

cdef int _QUERY, _RUN, _END


cdef class Flight:
    # what the lane hands over at construction
    cdef object lane, state, links, port, activity
    cdef dict shapes, runs
    cdef dict portals, statements, relayed  # the session's
    cdef list held, unsent
    cdef bint closed
    cdef object offer, adopt, resume, split, bind, run_key, answer_pass, ended
    cdef bytes bound_tail
    cdef long quiet_flag, discard_flag, suspended_flag
    cdef Py_ssize_t flush_bytes
    cdef long log_min_ms
    cdef object metrics
    cdef object pump_m, take_m
    cdef readonly long long taken  # statements started here
    # the arming's snapshot
    cdef readonly bint armed
    cdef bint in_block, writes_refused
    cdef object search_path, relay, hidden, mirrored, ready, begin_query
    # the statement in flight
    cdef readonly bint flight
    cdef int kind, seen, quiet, ready_count
    cdef long flags
    cdef bint rollback
    cdef readonly object link
    cdef object link_port, wire, described, route
    cdef bint writes
    cdef object entry, portal, text, data
    cdef list out
    cdef Py_ssize_t out_bytes
    cdef double started
    cdef object found_parts  # what Repeats._idle_link found


    cdef void _disarm(self) noexcept

    cdef void _rearm(self, bint in_block, object begin_query) except *

    cdef void _clear_flight(self) noexcept

    cdef void _began(self, str text) except *

    cdef void _sync(self) except *

    cdef void _send(self, bytes data) except *

    @cython.locals(port=object, written=bint)
    cdef void _start(self, int kind, object link, tuple parts, object entry, object route,
                     bint writes, str text, bytes data, bytes request, int quiet, object first,
                     long flags) except *

    @cython.locals(passed=bytes, kind=int, link=object, ready_count=int, quiet=int, seen=int,
                   entry=object, text=object, data=object)
    cdef object _handoff(self)

    @cython.locals(exchange=object)
    cdef void _handoff_and_pump(self) except *

    @cython.locals(out=list, joined=bytes)
    cdef void _write_out(self) except *

    @cython.locals(seconds=double, state=object, links=object, activity=object,
                   kind=int, route=object, writes=bint, logged=bint, ready=object, joined=bytes)
    cdef void _finish(self) except *

    @cython.locals(link=object, wire=object, unread=tuple, raw=object, buffer=bytearray,
                   described=object, pos=Py_ssize_t, flags=long, walked=tuple, passed=object,
                   size=Py_ssize_t)
    cdef void _pump(self) except *

    @cython.locals(wire=object)
    cpdef take(self, object data)
