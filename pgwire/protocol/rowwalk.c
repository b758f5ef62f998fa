/* The relay's per-row hop in C: data_rows_end(data, pos), the same answer as the pure
 * Python `pgwire.protocol.client.data_rows_end_py` (which stays, and is used when this
 * module is not built or FEDGATE_ROW_WALK=python); and the express lane's walk over a
 * source's answer, answer_pass(data, pos, flags, described), the twin of
 * `answer_pass_py` there.
 *
 * A relayed result is forwarded as slices of the bytes received; the only thing the
 * gateway must know is where a run of whole DataRows ends. In Python that hop costs one
 * loop turn per row (about 65 ns); here it is a few nanoseconds. Only the message headers
 * are read (tag byte and big-endian length), never the rows.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
data_rows_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "data_rows_end(data, pos) takes 2 arguments");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "data_rows_end: pos must not be negative");
        return NULL;
    }
    /* bytes, bytearray or memoryview; read-only, never kept past this call */
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *data = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    /* A row counts when its whole message (1 tag byte + the length, which includes its
     * own 4 bytes) lies inside the data; the run stops at the first that does not. */
    while (n - pos >= 5 && data[pos] == 'D') {
        Py_ssize_t length = ((Py_ssize_t)data[pos + 1] << 24) | ((Py_ssize_t)data[pos + 2] << 16)
                            | ((Py_ssize_t)data[pos + 3] << 8) | (Py_ssize_t)data[pos + 4];
        if (length + 1 > n - pos)
            break;
        pos += length + 1;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(pos);
}

/* answer_pass's flags: see `pgwire.protocol.client.answer_pass_py`, whose docstring is
 * the specification; the two must agree for any bytes (a test checks). */
#define PASS_DISCARD 1
#define PASS_QUIET 2
#define PASS_SUSPENDED 4

typedef struct {
    const char *at;
    Py_ssize_t len;
} piece;

static int
add_piece(piece **pieces, Py_ssize_t *count, Py_ssize_t *cap, piece *inline_pieces,
          const char *at, Py_ssize_t len)
{
    if (*count == *cap) {
        Py_ssize_t grown = *cap * 2;
        piece *bigger = PyMem_New(piece, grown);
        if (bigger == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(bigger, *pieces, sizeof(piece) * (size_t)*count);
        if (*pieces != inline_pieces)
            PyMem_Free(*pieces);
        *pieces = bigger;
        *cap = grown;
    }
    (*pieces)[*count].at = at;
    (*pieces)[*count].len = len;
    (*count)++;
    return 0;
}

static PyObject *
answer_pass(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, run_at = -1, run_end = -1, total = 0, count = 0, cap = 16;
    piece inline_pieces[16];
    piece *pieces = inline_pieces;
    PyObject *described, *kept = NULL, *out = NULL;
    long flags;
    int stopped = 0;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "answer_pass(data, pos, flags, described) takes 4 arguments");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "answer_pass: pos must not be negative");
        return NULL;
    }
    flags = PyLong_AsLong(args[2]);
    if (flags == -1 && PyErr_Occurred())
        return NULL;
    described = args[3];
    if (!PyDict_CheckExact(described)) {
        PyErr_SetString(PyExc_TypeError, "answer_pass: described must be a dict");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    /* The descriptions used, held until they are copied out. */
    kept = PyList_New(0);
    if (kept == NULL)
        goto done;
    const char *data = (const char *)view.buf;
    const unsigned char *bytes = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    const int discard = (flags & PASS_DISCARD) != 0;
    const int quiet = discard || (flags & PASS_QUIET) != 0;
    const int suspended = (flags & PASS_SUSPENDED) != 0;
    while (n - pos >= 5) {
        Py_ssize_t length = ((Py_ssize_t)bytes[pos + 1] << 24) | ((Py_ssize_t)bytes[pos + 2] << 16)
                            | ((Py_ssize_t)bytes[pos + 3] << 8) | (Py_ssize_t)bytes[pos + 4];
        if (length + 1 > n - pos)
            break;  /* cut by the chunk's end */
        unsigned char tag = bytes[pos];
        int passed;
        if (length < 4 || tag == 'Z' || tag == 'E' || (!quiet && tag == 'G')) {
            stopped = 1;
            break;
        }
        if (tag == 'T' && !quiet) {
            PyObject *key = PyBytes_FromStringAndSize(data + pos + 5, length - 4);
            if (key == NULL)
                goto done;
            PyObject *found = PyDict_GetItemWithError(described, key);
            Py_DECREF(key);
            if (found == NULL) {
                if (PyErr_Occurred())
                    goto done;
                stopped = 1;  /* not described yet: the caller's */
                break;
            }
            if (!PyBytes_CheckExact(found)) {
                PyErr_SetString(PyExc_TypeError, "answer_pass: a description must be bytes");
                goto done;
            }
            if (PyList_Append(kept, found) < 0)
                goto done;
            if (run_at >= 0) {
                if (add_piece(&pieces, &count, &cap, inline_pieces, data + run_at,
                              run_end - run_at) < 0)
                    goto done;
                total += run_end - run_at;
                run_at = run_end = -1;
            }
            if (add_piece(&pieces, &count, &cap, inline_pieces, PyBytes_AS_STRING(found),
                          PyBytes_GET_SIZE(found)) < 0)
                goto done;
            total += PyBytes_GET_SIZE(found);
            pos += length + 1;
            continue;
        }
        if (tag == 'D' || (tag == 's' && suspended))
            passed = !discard;
        else
            passed = !(quiet || tag == '1' || tag == '2' || tag == '3' || tag == 'n'
                       || tag == 't' || tag == 's' || tag == 'S');
        if (passed) {
            if (run_at >= 0 && run_end != pos) {
                if (add_piece(&pieces, &count, &cap, inline_pieces, data + run_at,
                              run_end - run_at) < 0)
                    goto done;
                total += run_end - run_at;
                run_at = -1;
            }
            if (run_at < 0)
                run_at = pos;
            run_end = pos + length + 1;
        }
        pos += length + 1;
    }
    if (run_at >= 0) {
        if (add_piece(&pieces, &count, &cap, inline_pieces, data + run_at, run_end - run_at) < 0)
            goto done;
        total += run_end - run_at;
    }
    PyObject *passed_bytes = PyBytes_FromStringAndSize(NULL, total);
    if (passed_bytes == NULL)
        goto done;
    char *to = PyBytes_AS_STRING(passed_bytes);
    for (Py_ssize_t i = 0; i < count; i++) {
        memcpy(to, pieces[i].at, (size_t)pieces[i].len);
        to += pieces[i].len;
    }
    out = Py_BuildValue("NnO", passed_bytes, pos, stopped ? Py_True : Py_False);
done:
    Py_XDECREF(kept);
    if (pieces != inline_pieces)
        PyMem_Free(pieces);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"data_rows_end", (PyCFunction)(void (*)(void))data_rows_end, METH_FASTCALL,
     "The end of the run of complete DataRows that starts at pos in data."},
    {"answer_pass", (PyCFunction)(void (*)(void))answer_pass, METH_FASTCALL,
     "The messages of a source's answer to pass on, where the walk stopped, and whether "
     "the caller reads the message there."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pgwire.protocol.rowwalk",
    "The relay's row walk and answer walk in C (see pgwire.protocol.client).", -1, methods,
};

PyMODINIT_FUNC
PyInit_rowwalk(void)
{
    return PyModule_Create(&module);
}
