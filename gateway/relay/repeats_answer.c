/* The express lane's repeats in C (repeats.c): the source's answer to a statement in
 * flight, its end (counted, the session idle, the client's answer written), and the
 * handing over of a statement to the Python road. */
#include "repeats_shared.h"

/* The statement in flight goes on as a Python Exchange (lane._adopt): a new reference to
 * it, or NULL. What the client was to get so far goes to the session first. */
PyObject *
rp_handoff(Repeats *self)
{
    PyObject *passed, *args, *exchange;
    if (!self->flight) {
        PyErr_SetString(PyExc_RuntimeError, "Repeats: no statement in flight");
        return NULL;
    }
    passed = _PyBytes_Join(empty_bytes, self->out);
    if (passed == NULL)
        return NULL;
    args = Py_BuildValue("(iOiiiOOON)", self->kind, self->link, self->ready_count,
                         self->quiet, self->seen, self->entry, self->text, self->data, passed);
    rp_clear_flight(self);
    rp_disarm(self);
    if (args == NULL)
        return NULL;
    {
        PyObject *adopt = DG(lane, _adopt);
        exchange = adopt == NULL ? NULL : PyObject_Call(adopt, args, NULL);
        Py_XDECREF(adopt);
    }
    Py_DECREF(args);
    return exchange;
}

PyObject *
Repeats_handoff(Repeats *self, PyObject *unused)
{
    return rp_handoff(self);
}

PyObject *
rp_handoff_and_pump(Repeats *self)
{
    PyObject *exchange = rp_handoff(self), *r;
    if (exchange == NULL)
        return NULL;
    r = PyObject_CallMethodNoArgs(exchange, names[N_pump]);
    Py_DECREF(exchange);
    return r;
}

/* What the statement in flight has for the client so far, written now (`rp_send`) */
int
rp_write_out(Repeats *self)
{
    PyObject *joined = _PyBytes_Join(empty_bytes, self->out);
    int r;
    if (joined == NULL)
        return -1;
    r = PyList_SetSlice(self->out, 0, PyList_GET_SIZE(self->out), NULL);
    self->out_bytes = 0;
    if (r == 0)
        r = rp_send(self, joined);
    Py_DECREF(joined);
    return r;
}

/* /metrics: one statement of the lane ended, as Metrics.statement_done */
int
rp_counted(Repeats *self, int writes, double seconds)
{
    PyObject *key = writes ? k_write : k_select, *n, *next, *counts, *t;
    int i, r;
    n = PyDict_GetItemWithError(self->statements_count, key);
    if (n == NULL && PyErr_Occurred())
        return -1;
    next = n == NULL ? PyLong_FromLong(1) : PyNumber_Add(n, one);
    if (next == NULL)
        return -1;
    r = PyDict_SetItem(self->statements_count, key, next);
    Py_DECREF(next);
    if (r < 0)
        return -1;
    for (i = 0; i < self->nbuckets && self->buckets[i] < seconds; i++)
        ;  /* bisect_left: the first bound >= seconds, else +Inf */
    if ((counts = GET(self->histogram, counts)) == NULL)
        return -1;
    if (!PyList_Check(counts) || PyList_GET_SIZE(counts) <= i) {
        Py_DECREF(counts);
        PyErr_SetString(PyExc_TypeError, "Repeats: unexpected histogram");
        return -1;
    }
    next = PyNumber_Add(PyList_GET_ITEM(counts, i), one);
    if (next == NULL || PyList_SetItem(counts, i, next) < 0) {
        Py_DECREF(counts);
        return -1;
    }
    Py_DECREF(counts);
    if ((n = GET(self->histogram, total)) == NULL)
        return -1;
    t = PyFloat_FromDouble(PyFloat_AsDouble(n) + seconds);
    Py_DECREF(n);
    if (t == NULL)
        return -1;
    r = SET(self->histogram, total, t);
    Py_DECREF(t);
    return r < 0 ? -1 : rp_increment(self->histogram, NULL, N_count);
}

/* The last ReadyForQuery came: as HotLane._hot_done / _hot_run_done and _finished. */
int
rp_finish(Repeats *self)
{
    PyObject *v = NULL, *route = NULL, *prepared = NULL, *r;
    int writes, held, ok = -1;
    double seconds = rp_wall_now() - self->started;
    if (PS(consumer, Py_None) < 0 || PS(taker, Py_None) < 0)
        goto done;
    if ((v = PG(_paused)) == NULL)
        goto done;
    if (PyObject_IsTrue(v) && rp_call_method1(self->c_port, N_resume, s_client) < 0)
        goto done;
    Py_CLEAR(v);
    if (self->kind == KIND_END) {  /* as ExpressLane._control_done */
        if (DS(links, writer, Py_None) < 0 || rp_call_method(self->state, N_end_block) < 0
            || rp_rearm(self, 0, Py_None) < 0
            || PyList_Append(self->out, self->rollback ? done_rollback : done_commit) < 0)
            goto done;
        goto idle;
    }
    if (self->kind == KIND_QUERY)
        route = GET(self->entry, route);
    else if ((prepared = GET(self->entry, prepared)) != NULL)
        route = GET(prepared, route);
    if (route == NULL || (writes = rp_dtrue(route, NULL, N_writes)) < 0)
        goto done;
    if (rp_counted(self, writes, seconds) < 0)
        goto done;
    if (writes && self->in_block) {
        if ((v = GET(route, source)) == NULL || DS(links, writer, v) < 0)
            goto done;
        Py_CLEAR(v);
    }
    if (self->kind == KIND_RUN && DS(state, skipping, Py_False) < 0)
        goto done;  /* Sync, as Session.on_sync */
    if (!self->in_block) {
        if ((v = DG(state, portals)) == NULL)
            goto done;
        if (PyObject_IsTrue(v) && rp_call_method1(self->state, N_close_portals, Py_False) < 0)
            goto done;
        Py_CLEAR(v);
    }
idle:
    if (DS(activity, state, s_idle) < 0 || DS(activity, stream, Py_None) < 0)
        goto done;
    {   /* the statement log (gateway.state.activity.ended), when it logs anything */
        if (self->log_min_ms < 0) {
            if (DS(activity, timed, Py_None) < 0)
                goto done;
        }
        else {
            r = PyObject_CallFunctionObjArgs(self->ended, self->activity, self->state, NULL);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
        }
    }
    if (self->ready == NULL) {  /* never so: rp_disarm keeps it while in flight */
        PyErr_SetString(PyExc_RuntimeError, "Repeats: a statement ended with no ReadyForQuery");
        goto done;
    }
    if (DS(lane, exchange, Py_None) < 0 || PyList_Append(self->out, self->ready) < 0)
        goto done;
    if ((v = DG(lane, held)) == NULL)
        goto done;
    held = PyObject_IsTrue(v);
    Py_CLEAR(v);
    if (held || DT(lane, closed)) {
        /* what the client sent meanwhile: the lane's Python takes it from here */
        PyObject *joined = _PyBytes_Join(empty_bytes, self->out);
        rp_clear_flight(self);
        rp_disarm(self);
        if (joined == NULL)
            goto done;
        ok = rp_call_method1(self->state, N_write, joined);
        Py_DECREF(joined);
        if (ok == 0)
            ok = rp_call_method(self->lane, N__continue);
        goto done;
    }
    ok = rp_write_out(self);
    rp_clear_flight(self);
done:
    Py_XDECREF(v); Py_XDECREF(route); Py_XDECREF(prepared);
    return ok;
}

/* The link's consumer while a statement of ours is in flight: as Exchange.pump. */
PyObject *
rp_pump(Repeats *self)
{
    PyObject *wire = NULL, *buffer = NULL, *described = NULL, *v = NULL;
    PyObject *result = NULL, *pos_obj = NULL, *flags_obj = NULL;
    Py_ssize_t pos;
    int eof;
    if (!self->flight)
        Py_RETURN_NONE;
    if ((wire = LG(wire)) == NULL || (buffer = GET(wire, buffer)) == NULL
        || (described = LG(described)) == NULL || (v = GET(wire, pos)) == NULL)
        goto done;
    pos = PyLong_AsSsize_t(v);
    Py_CLEAR(v);
    if (pos == -1 && PyErr_Occurred())
        goto done;
    if (!PyByteArray_Check(buffer))
        goto hand_off;
    for (;;) {
        PyObject *call[4], *passed;
        const unsigned char *b;
        Py_ssize_t size, mend;
        int stopped;
        if ((pos_obj = PyLong_FromSsize_t(pos)) == NULL
            || (flags_obj = PyLong_FromLong(
                    (self->kind == KIND_END ? self->discard_flag : 0)
                    | (self->seen < self->quiet ? self->quiet_flag : 0))) == NULL)
            goto done;
        call[0] = buffer; call[1] = pos_obj; call[2] = flags_obj; call[3] = described;
        v = PyObject_Vectorcall(self->answer_pass, call, 4, NULL);
        Py_CLEAR(pos_obj);
        Py_CLEAR(flags_obj);
        if (v == NULL)
            goto done;
        if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 3) {
            PyErr_SetString(PyExc_TypeError, "Repeats: unexpected answer_pass result");
            goto done;
        }
        passed = PyTuple_GET_ITEM(v, 0);
        pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(v, 1));
        stopped = PyObject_IsTrue(PyTuple_GET_ITEM(v, 2));
        if (PyBytes_Check(passed) && PyBytes_GET_SIZE(passed)) {
            if (PyList_Append(self->out, passed) < 0)
                goto done;
            self->out_bytes += PyBytes_GET_SIZE(passed);
        }
        Py_CLEAR(v);
        if ((pos == -1 && PyErr_Occurred()) || stopped < 0)
            goto done;
        if (!stopped)
            break;
        b = (const unsigned char *)PyByteArray_AS_STRING(buffer);
        size = PyByteArray_GET_SIZE(buffer);
        if (pos + 6 > size || b[pos] != 'Z' || rp_be32(b + pos + 1) != 5)
            goto hand_off_at;  /* an error, a new description, COPY: Python reads it */
        mend = pos + 6;
        if (LS(status, s_status[b[pos + 5]]) < 0)
            goto done;
        pos = mend;
        if (++self->seen >= self->ready_count) {
            if ((v = PyLong_FromSsize_t(pos)) == NULL || SET(wire, pos, v) < 0)
                goto done;
            Py_CLEAR(v);
            if (rp_finish(self) < 0)
                goto done;
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    if ((v = PyLong_FromSsize_t(pos)) == NULL || SET(wire, pos, v) < 0)
        goto done;
    Py_CLEAR(v);
    if ((eof = PT(eof)) < 0)
        goto done;
    if (eof)
        goto hand_off;  /* the source is gone: the Python exchange says so */
    if (self->out_bytes >= self->flush_bytes && rp_write_out(self) < 0)
        goto done;
    result = Py_NewRef(Py_None);
    goto done;
hand_off_at:
    if ((v = PyLong_FromSsize_t(pos)) == NULL || SET(wire, pos, v) < 0)
        goto done;
    Py_CLEAR(v);
hand_off:
    result = rp_handoff_and_pump(self);
done:
    Py_XDECREF(wire); Py_XDECREF(buffer); Py_XDECREF(described);
    Py_XDECREF(v); Py_XDECREF(pos_obj); Py_XDECREF(flags_obj);
    return result;
}

/* `pump`, and what Exchange.pump does when its own walk fails (a bug of ours): the
 * statement goes on as a Python exchange, which ends it with the error, drops the link
 * and logs it (Exchange.failed). */
PyObject *
Repeats_pump(Repeats *self, PyObject *unused)
{
    PyObject *r = rp_pump(self), *type, *value, *tb, *exchange;
    if (r != NULL || !self->flight)
        return r;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    exchange = rp_handoff(self);
    if (exchange == NULL) {
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
        return NULL;
    }
    r = PyObject_CallMethodOneArg(exchange, names[N_failed], value != NULL ? value : Py_None);
    Py_DECREF(exchange);
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    return r;
}

/* The link's chunk while a statement of ours is in flight (LinkPort.taker): the link's
 * reader gets it (as BackendReader.feed), then `pump`. */
PyObject *
Repeats_take(Repeats *self, PyObject *data)
{
    PyObject *wire, *buffer = NULL, *v = NULL;
    Py_buffer view;
    Py_ssize_t pos, size;
    int ok = -1;
    if (self->link == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Repeats: no statement in flight");
        return NULL;
    }
    if ((wire = LG(wire)) == NULL)
        return NULL;
    if ((buffer = GET(wire, buffer)) == NULL || (v = GET(wire, pos)) == NULL)
        goto done;
    if (!PyByteArray_Check(buffer)) {
        PyErr_SetString(PyExc_TypeError, "Repeats: the link's buffer must be a bytearray");
        goto done;
    }
    pos = PyLong_AsSsize_t(v);
    if (pos == -1 && PyErr_Occurred())
        goto done;
    size = PyByteArray_GET_SIZE(buffer);
    if (pos < 0 || pos > size) {
        PyErr_SetString(PyExc_RuntimeError, "Repeats: the link's read position is outside its buffer");
        goto done;
    }
    if (pos > 0) {
        char *b = PyByteArray_AS_STRING(buffer);
        if (pos < size)
            memmove(b, b + pos, (size_t)(size - pos));
        size -= pos;
        if (PyByteArray_Resize(buffer, size) < 0 || SET(wire, pos, zero) < 0)
            goto done;
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        goto done;
    if (PyByteArray_Resize(buffer, size + view.len) < 0) {
        PyBuffer_Release(&view);
        goto done;
    }
    memcpy(PyByteArray_AS_STRING(buffer) + size, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    ok = 0;
done:
    Py_DECREF(wire);
    Py_XDECREF(buffer);
    Py_XDECREF(v);
    if (ok < 0)
        return NULL;
    return Repeats_pump(self, NULL);
}
