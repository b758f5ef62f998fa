# The C types of statement_bytes.py's names when Cython compiles it (see its docstring).
cimport cython

cdef bytes _piece(const unsigned char *view, Py_ssize_t start, Py_ssize_t end)
cdef bint _space(unsigned char c) noexcept
cdef bint _digit(unsigned char c) noexcept
cdef bint _joins_number(unsigned char c) noexcept

@cython.locals(n=Py_ssize_t, s="const unsigned char *", c="unsigned char", semicolon=Py_ssize_t,
               quotes=Py_ssize_t,
               i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t,
               part=Py_ssize_t, parts=list, numbers=list)
cpdef object quick_split_bytes(object data)

@cython.locals(body=Py_ssize_t, message=bytearray, out="unsigned char *", o=Py_ssize_t)
cpdef bytes quick_bind(object head, object numbers, object tail)

cdef Py_ssize_t _put_int32(unsigned char *out, Py_ssize_t at, long long value) noexcept

@cython.locals(n=Py_ssize_t, d="const unsigned char *", k=Py_ssize_t)
cdef Py_ssize_t _put(unsigned char *out, Py_ssize_t at, bytes data) noexcept

@cython.locals(k=Py_ssize_t)
cdef Py_ssize_t _copy(unsigned char *out, Py_ssize_t at, const unsigned char *d, Py_ssize_t start,
                      Py_ssize_t end) noexcept

@cython.locals(value=int)
cdef int _int16(const unsigned char *d, Py_ssize_t at) noexcept

@cython.locals(value="long long")
cdef long long _int32(const unsigned char *d, Py_ssize_t at) noexcept

@cython.locals(n=Py_ssize_t, d="const unsigned char *", p=Py_ssize_t, params_at=Py_ssize_t,
               formats=int, count=int, values_at=Py_ssize_t, size="long long", key=bytearray,
               out="unsigned char *", o=Py_ssize_t)
cpdef object run_key_of(object data, Py_ssize_t start, Py_ssize_t end, Py_ssize_t stop)
