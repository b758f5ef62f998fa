/* The relay's per-row hop in C: data_rows_end(data, pos), the same answer as the pure
 * Python `pgwire.protocol.client.data_rows_end_py` (which stays, and is used when this
 * module is not built or FEDGATE_ROW_WALK=python).
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

static PyMethodDef methods[] = {
    {"data_rows_end", (PyCFunction)(void (*)(void))data_rows_end, METH_FASTCALL,
     "The end of the run of complete DataRows that starts at pos in data."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pgwire.protocol.rowwalk",
    "The relay's row walk in C (see pgwire.protocol.client.data_rows_end).", -1, methods,
};

PyMODINIT_FUNC
PyInit_rowwalk(void)
{
    return PyModule_Create(&module);
}
