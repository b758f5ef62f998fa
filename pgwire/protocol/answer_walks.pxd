# The C types of answer_walks.py's names when Cython compiles it (see its docstring).
cimport cython

cdef int DATA_ROW

cdef int _readable(object data, Py_ssize_t pos) except -1

cdef bytes _piece(const unsigned char *view, Py_ssize_t start, Py_ssize_t end)

@cython.locals(n=Py_ssize_t, view="const unsigned char *", length="long long")
cpdef Py_ssize_t data_rows_end(object data, Py_ssize_t pos) except -1

@cython.locals(n=Py_ssize_t, view="const unsigned char *", length="long long",
               tag="unsigned char", run_at=Py_ssize_t, run_end=Py_ssize_t, discard=bint,
               quiet=bint, suspended=bint, stopped=bint, passed=bint, pieces=list)
cpdef tuple answer_pass(object data, Py_ssize_t pos, long flags, object described)
