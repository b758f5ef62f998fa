# The C types of repeats.py's names when Cython compiles it (see its docstring): the
# state is Flight's typed fields (repeats_flight.pxd).
cimport cython

from gateway.relay.express.repeats_flight cimport Flight

cdef int CONTROL_NONE, CONTROL_BEGIN, CONTROL_COMMIT, CONTROL_ROLLBACK
cdef dict _CONTROL_WORDS
cdef bytes _DONE_BEGIN, _ASK_COMMIT, _ASK_ROLLBACK

cdef bint _space(unsigned char c) noexcept

cdef Py_ssize_t _be32(const unsigned char *d, Py_ssize_t at) noexcept

@cython.locals(hn=Py_ssize_t, pn=Py_ssize_t, tn=Py_ssize_t, length=Py_ssize_t, built=bytearray,
               out="unsigned char *", h="const unsigned char *", m="const unsigned char *",
               t="const unsigned char *", k=Py_ssize_t)
cdef bytes _message(unsigned char tag, bytes head, bytes middle, Py_ssize_t start, Py_ssize_t end,
                    bytes tail)


@cython.final
cdef class Repeats(Flight):
    @cython.locals(state=object)
    cdef bint _session_ready(self) except -1

    @cython.locals(writes=bint, source=object, links=object, writer=object, link=object,
                   read_for=object)
    cdef object _idle_link(self, object route, object version)

    @cython.locals(count=int, link=object)
    cdef int _links_in_block(self, int enough) except -1

    @cython.locals(d="const unsigned char *", split=tuple, sql=bytes, numbers=list, entry=object,
                   count=Py_ssize_t, number=bytes, c="unsigned char", version=object,
                   in_tx=bint, route=object, link=object, key=object, remote=object,
                   quiet=int, head=bytes, request=bytes, text=str)
    cdef bint _take_query(self, bytes data, Py_ssize_t n) except -1

    @cython.locals(d="const unsigned char *", bind=Py_ssize_t, end=Py_ssize_t, keyed=tuple,
                   params_at=Py_ssize_t, entry=object, in_block=bint, limited=bint,
                   version=object, prepared=object, parsed=object, state=object, found=object,
                   portals=dict, old=object, link=object, remote=object, quiet=int,
                   head=object, answered=object, request=bytes, text=str, portal=object)
    cdef bint _take_run(self, bytes data, Py_ssize_t n) except -1

    @cython.locals(a=Py_ssize_t, b=Py_ssize_t, found=object)
    cdef tuple _control_word(self, bytes d, Py_ssize_t start, Py_ssize_t end)

    @cython.locals(kind=int, at=Py_ssize_t, stop=Py_ssize_t, state=object, links=object,
                   activity=object, count=int, link=object, said=bytes, sql=str,
                   begin_query=bytes)
    cdef bint _take_control(self, bytes data, Py_ssize_t n) except -1
