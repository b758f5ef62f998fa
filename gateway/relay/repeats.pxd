# The C types of repeats.py's names when Cython compiles it (see its docstring).
cimport cython

cdef bytes _READY_IDLE, _READY_BLOCK, _DONE_BEGIN, _DONE_COMMIT, _DONE_ROLLBACK
cdef bytes _ASK_COMMIT, _ASK_ROLLBACK
cdef dict _CONTROL

cdef long long _be32(const unsigned char *d, Py_ssize_t at) noexcept

@cython.locals(number=bytes)
cdef bint _int4s(list numbers) except -1

@cython.locals(text=bytes)
cdef int _control_word(bytes body) except -1


cdef class Repeats:
    # what the lane remembers (its dicts, read here) and the callbacks
    cdef dict shapes, runs
    cdef object decline, send, hand_back, held, moment, block_reached, link_for, prefix_of
    cdef object run_ready, started, counted, idle, began_block, ended_block, end_link, adopt
    cdef readonly long long taken  # statements started here (SHOW fedgate.express_repeats)
    cdef readonly bint armed, flight
    # the arming's snapshot
    cdef bint in_block
    cdef object search_path, relay, hidden
    cdef bytes ready
    # the statement in flight
    cdef int kind, seen, quiet, ready_count
    cdef bint rollback, writes
    cdef object link, entry, text, data, source
    cdef list out
    cdef Py_ssize_t out_bytes

    @cython.locals(n=Py_ssize_t, tag=int)
    cpdef bint offer(self, object data) except -1

    @cython.locals(split=tuple, numbers=list, quiet=int, request=bytes, prefix=bytes)
    cdef bint _take_query(self, bytes data, Py_ssize_t n) except -1

    @cython.locals(tag=int, bind=Py_ssize_t, end=Py_ssize_t, params_at=Py_ssize_t,
                   size=Py_ssize_t, keyed=tuple, quiet=int, head=bytes, prefix=bytes)
    cdef bint _take_run(self, bytes data, Py_ssize_t n) except -1

    @cython.locals(kind=int, reached=bint)
    cdef bint _take_control(self, bytes data, Py_ssize_t n) except -1

    cdef _start(self, int kind, object link, object entry, object text, bytes data,
               bytes request, int quiet, object first, object route)

    @cython.locals(buffer=bytearray, pos=Py_ssize_t, size=Py_ssize_t, flags=long,
                   stopped=bint, out=list, answer=tuple, data=bytes)
    cdef _pump(self)

    @cython.locals(out=list, data=bytes)
    cdef _finish(self)

    cdef void _clear_flight(self) noexcept
