# The C types of repeats.py's names when Cython compiles it (see its docstring): the
# state is Flight's typed fields (repeats_flight.pxd) and what the lane keeps of a
# statement, KeptQuery and KeptRun.
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
cdef class KeptQuery:
    cdef readonly object route, source, version
    cdef readonly bint writes, in_transaction
    cdef readonly str lifted_sql, search_path
    cdef readonly tuple int4_key
    cdef object bound_name
    cdef bytes head

    cpdef bytes bind_head(self, str name, int count)


@cython.final
cdef class KeptRun:
    cdef readonly object prepared, route, source, parsed
    cdef readonly bint writes, limited
    cdef readonly str sql, statement
    cdef readonly tuple formats, remote_key
    cdef readonly bytes answered, tail
    cdef object bound_name
    cdef bytes head

    cpdef bytes bind_head(self, str name)


@cython.final
cdef class Repeats(Flight):
    @cython.locals(catalog=object)
    cdef object _catalog(self)

    @cython.locals(link=object, parts=object)
    cdef object _idle_link(self, object source, bint writes, object kept_in_transaction,
                           tuple key, object version, object epoch)

    @cython.locals(d="const unsigned char *", split=tuple, sql=bytes, numbers=list,
                   entry=KeptQuery, count=Py_ssize_t, number=bytes, c="unsigned char",
                   catalog=tuple, version=object, link=object, key=object, parts=tuple,
                   quiet=int, head=bytes, request=bytes, text=str)
    cdef bint _take_query(self, bytes data, Py_ssize_t n) except -1

    @cython.locals(d="const unsigned char *", bind=Py_ssize_t, end=Py_ssize_t, keyed=tuple,
                   params_at=Py_ssize_t, entry=KeptRun, in_block=bint, limited=bint,
                   catalog=tuple, prepared=object, parsed=object, found=object,
                   portals=dict, old=object, link=object, parts=tuple, quiet=int,
                   head=object, answered=object, request=bytes, text=str, portal=object)
    cdef bint _take_run(self, bytes data, Py_ssize_t n) except -1

    @cython.locals(a=Py_ssize_t, b=Py_ssize_t, found=object)
    cdef tuple _control_word(self, bytes d, Py_ssize_t start, Py_ssize_t end)

    @cython.locals(kind=int, at=Py_ssize_t, stop=Py_ssize_t, state=object, links=object,
                   activity=object, count=int, link=object, ending=object, parts=tuple,
                   said=bytes, sql=str, begin_query=bytes)
    cdef bint _take_control(self, bytes data, Py_ssize_t n) except -1
