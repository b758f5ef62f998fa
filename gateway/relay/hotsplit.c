/* The express lane's split of a simple Query's text in C: split(text), the same answer
 * as the pure Python `gateway.relay.quick.quick_split_bytes_py` (which stays, and is used
 * when this module is not built or FEDGATE_HOT_SPLIT=python); and bind(head, numbers,
 * tail), the Bind of those numbers, as `quick_bind_py` there; and run_key(data, start,
 * end, stop), the key of an extended-protocol run, as `gateway.relay.hot.run_key_of_py`.
 *
 * For a text the lane reads this way (ASCII; no quotes, backslashes, dollar signs,
 * question marks, comments or inner semicolons), it returns (statement, shape, numbers):
 * the text stripped of white space and of its trailing semicolons, that statement with
 * each number replaced by '?', and the numbers; None for any other text, or one without
 * numbers. A number is what gateway.relay.hot's _NUMBER matches:
 * (?<![\w$.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?). One pass over the bytes replaces two
 * regular expressions, three strips and a join, on every statement of the lane.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* What str.strip() strips among ASCII characters. */
static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* \w, $ and . : what may not come right before a number. */
static int
joins_number(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
           || c == '$' || c == '.';
}

static PyObject *
split(PyObject *module, PyObject *arg)
{
    char *raw;
    Py_ssize_t n;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "split(text) takes bytes");
        return NULL;
    }
    if (PyBytes_AsStringAndSize(arg, &raw, &n) < 0)
        return NULL;
    const unsigned char *s = (const unsigned char *)raw;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 0x80 || c == '\'' || c == '"' || c == '\\' || c == '$' || c == '?')
            Py_RETURN_NONE;
        if ((c == '-' || c == '/') && i + 1 < n && s[i + 1] == (c == '-' ? '-' : '*'))
            Py_RETURN_NONE;
    }
    Py_ssize_t a = 0, b = n;
    while (a < b && is_space(s[a]))
        a++;
    while (b > a && is_space(s[b - 1]))
        b--;
    while (b > a && s[b - 1] == ';')
        b--;
    while (b > a && is_space(s[b - 1]))
        b--;
    if (memchr(s + a, ';', (size_t)(b - a)) != NULL)
        Py_RETURN_NONE;
    /* The shape is at most as long as the statement. */
    PyObject *shape = PyBytes_FromStringAndSize(NULL, b - a);
    PyObject *numbers = PyList_New(0);
    if (shape == NULL || numbers == NULL)
        goto fail;
    char *out = PyBytes_AS_STRING(shape);
    Py_ssize_t o = 0, i = a;
    while (i < b) {
        if (is_digit(s[i]) && (i == a || !joins_number(s[i - 1]))) {
            Py_ssize_t j = i;
            while (j < b && is_digit(s[j]))
                j++;
            if (j < b && s[j] == '.') {
                j++;
                while (j < b && is_digit(s[j]))
                    j++;
            }
            if (j < b && (s[j] == 'e' || s[j] == 'E')) {
                Py_ssize_t k = j + 1;
                if (k < b && (s[k] == '+' || s[k] == '-'))
                    k++;
                if (k < b && is_digit(s[k])) {
                    while (k < b && is_digit(s[k]))
                        k++;
                    j = k;
                }
            }
            PyObject *number = PyBytes_FromStringAndSize((const char *)s + i, j - i);
            if (number == NULL || PyList_Append(numbers, number) < 0) {
                Py_XDECREF(number);
                goto fail;
            }
            Py_DECREF(number);
            out[o++] = '?';
            i = j;
        }
        else {
            out[o++] = (char)s[i++];
        }
    }
    if (PyList_GET_SIZE(numbers) == 0) {  /* nothing to lift */
        Py_DECREF(shape);
        Py_DECREF(numbers);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&shape, o) < 0) {
        Py_DECREF(numbers);
        return NULL;
    }
    PyObject *sql = (a == 0 && b == n) ? Py_NewRef(arg)
                                       : PyBytes_FromStringAndSize((const char *)s + a, b - a);
    if (sql == NULL)
        goto fail;
    PyObject *result = PyTuple_Pack(3, sql, shape, numbers);
    Py_DECREF(sql);
    Py_DECREF(shape);
    Py_DECREF(numbers);
    return result;
fail:
    Py_XDECREF(shape);
    Py_XDECREF(numbers);
    return NULL;
}

/* bind(head, numbers, tail): the Bind of the split's numbers (text format) to the source's
 * statement, then `tail`, as `gateway.relay.quick.quick_bind_py` builds it:
 *   'B' int32(length) head { int32(len(number)) number }... int16(0) tail
 * where `head` is the Bind's bytes between its length and its values. */
static PyObject *
bind(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyList_Check(args[1])
        || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "bind(head: bytes, numbers: list[bytes], tail: bytes)");
        return NULL;
    }
    PyObject *head = args[0], *numbers = args[1], *tail = args[2];
    Py_ssize_t count = PyList_GET_SIZE(numbers);
    Py_ssize_t body = PyBytes_GET_SIZE(head) + 2;  /* + the result formats' count */
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *number = PyList_GET_ITEM(numbers, i);
        if (!PyBytes_Check(number)) {
            PyErr_SetString(PyExc_TypeError, "bind: the numbers must be bytes");
            return NULL;
        }
        body += 4 + PyBytes_GET_SIZE(number);
    }
    if (body + 4 > 0x7fffffff) {
        PyErr_SetString(PyExc_ValueError, "bind: the message would be too long");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, 1 + 4 + body + PyBytes_GET_SIZE(tail));
    if (out == NULL)
        return NULL;
    unsigned char *to = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t length = body + 4;
    *to++ = 'B';
    *to++ = (unsigned char)(length >> 24);
    *to++ = (unsigned char)(length >> 16);
    *to++ = (unsigned char)(length >> 8);
    *to++ = (unsigned char)length;
    memcpy(to, PyBytes_AS_STRING(head), (size_t)PyBytes_GET_SIZE(head));
    to += PyBytes_GET_SIZE(head);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *number = PyList_GET_ITEM(numbers, i);
        Py_ssize_t size = PyBytes_GET_SIZE(number);
        *to++ = (unsigned char)(size >> 24);
        *to++ = (unsigned char)(size >> 16);
        *to++ = (unsigned char)(size >> 8);
        *to++ = (unsigned char)size;
        memcpy(to, PyBytes_AS_STRING(number), (size_t)size);
        to += size;
    }
    *to++ = 0;
    *to++ = 0;
    memcpy(to, PyBytes_AS_STRING(tail), (size_t)PyBytes_GET_SIZE(tail));
    return out;
}

static int
read_i16(const unsigned char *d, Py_ssize_t n, Py_ssize_t at, long *value)
{
    if (at < 0 || at + 2 > n)
        return -1;
    *value = (long)(int16_t)(((unsigned)d[at] << 8) | d[at + 1]);
    return 0;
}

static int
read_i32(const unsigned char *d, Py_ssize_t n, Py_ssize_t at, long *value)
{
    if (at < 0 || at + 4 > n)
        return -1;
    *value = (long)(int32_t)(((uint32_t)d[at] << 24) | ((uint32_t)d[at + 1] << 16)
                             | ((uint32_t)d[at + 2] << 8) | (uint32_t)d[at + 3]);
    return 0;
}

/* run_key(data, start, end, stop): the key of an extended-protocol run whose Bind is
 * data[start:end] and which ends at `stop`, and where the Bind's parameters begin; None
 * when the Bind does not add up. As `gateway.relay.hot.run_key_of_py`: the run's bytes
 * up to `stop` without the Bind's length and its parameter values. */
static PyObject *
run_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, end, stop;
    Py_buffer view;
    PyObject *out = NULL;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "run_key(data, start, end, stop) takes 4 arguments");
        return NULL;
    }
    start = PyLong_AsSsize_t(args[1]);
    end = PyLong_AsSsize_t(args[2]);
    stop = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *d = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    if (start < 0 || end > n || stop > n || end > stop) {
        PyErr_SetString(PyExc_ValueError, "run_key: the Bind must lie inside the run");
        goto done;
    }
    if (start + 5 > end)  /* a length below 4: not a Bind that adds up */
        goto none;
    /* the portal's and the statement's names, each ended by a NUL */
    const unsigned char *first = memchr(d + start + 5, 0, (size_t)(end - start - 5));
    if (first == NULL)
        goto none;
    Py_ssize_t after = (first - d) + 1;
    const unsigned char *second = after < end ? memchr(d + after, 0, (size_t)(end - after)) : NULL;
    if (second == NULL)
        goto none;
    Py_ssize_t params_at = (second - d) + 1, p, values_at;
    long formats, count, size;
    if (read_i16(d, n, params_at, &formats) < 0 || formats < 0)
        goto none;
    p = params_at + 2 + 2 * formats;
    if (read_i16(d, n, p, &count) < 0 || count < 0)
        goto none;
    p += 2;
    values_at = p;
    for (long i = 0; i < count; i++) {
        if (read_i32(d, n, p, &size) < 0)
            goto none;
        p += 4 + (size > 0 ? size : 0);
    }
    if (p + 2 > end)
        goto none;
    PyObject *key = PyBytes_FromStringAndSize(NULL, (start + 1) + (values_at - start - 5)
                                                    + (stop - p));
    if (key == NULL)
        goto done;
    char *to = PyBytes_AS_STRING(key);
    memcpy(to, d, (size_t)(start + 1));
    to += start + 1;
    memcpy(to, d + start + 5, (size_t)(values_at - start - 5));
    to += values_at - start - 5;
    memcpy(to, d + p, (size_t)(stop - p));
    out = Py_BuildValue("Nn", key, params_at);
    goto done;
none:
    out = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"split", split, METH_O,
     "(statement, shape, numbers) of a simple Query's text (bytes) the lane reads, else None."},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL,
     "The Bind of the numbers to the statement `head` names, then `tail`."},
    {"run_key", (PyCFunction)(void (*)(void))run_key, METH_FASTCALL,
     "(key, where the parameters begin) of an extended-protocol run, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gateway.relay.hotsplit",
    "The express lane's Query split and Bind in C (see gateway.relay.quick).", -1, methods,
};

PyMODINIT_FUNC
PyInit_hotsplit(void)
{
    return PyModule_Create(&module);
}
