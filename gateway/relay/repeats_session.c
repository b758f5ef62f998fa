/* The express lane's repeats in C (repeats.c): the names and constants every file uses,
 * reading and writing the session's Python objects, and whether the session, its links
 * and a link are ready for a repeat. */
#include "repeats_shared.h"

static const char *const NAMES[N_COUNT] = {
    "state", "links", "port", "activity", "ctx", "_shapes", "_runs", "closed", "_out",
    "draining", "catalog_stale", "catalog", "version", "search_path", "in_transaction",
    "route", "writes", "source", "writer", "broken", "consumer", "eof", "wire", "pos",
    "buffer", "row_types_for", "schema_epoch", "statements_epoch", "_mirrored", "int4_key",
    "statements", "remote", "head", "bind_head", "status", "transport", "write",
    "skipping", "query", "started", "timed", "plan", "sources", "figures", "stream",
    "exchange", "taken", "pump", "described", "_paused", "resume", "counts", "total",
    "count", "portals", "close_portals", "config", "server", "log_min_duration_ms",
    "held", "_continue", "is_closing", "_adopt", "limited", "prepared", "parsed",
    "relayed", "statement", "remote_key", "answered", "tail", "writers", "sql", "taker",
    "take", "failed", "ddl", "begin_sql", "begin_block", "end_block", "writes_refused",
};

PyObject *names[N_COUNT];
PyObject *z_idle, *z_block, *done_begin, *done_commit, *done_rollback, *ask_commit,
    *ask_rollback, *s_commit, *s_rollback;
PyObject *s_active, *s_idle, *s_client, *s_status[256], *k_select, *k_write,
    *empty_tuple, *empty_bytes, *empty_str, *one, *zero;

/* The interned names and the constant messages and strings, made once */
int
rp_make_constants(void)
{
    int i;
    for (i = 0; i < N_COUNT; i++)
        if ((names[i] = PyUnicode_InternFromString(NAMES[i])) == NULL)
            return -1;
    for (i = 0; i < 256; i++) {
        char c = (char)i;
        if ((s_status[i] = PyUnicode_DecodeLatin1(&c, 1, NULL)) == NULL)
            return -1;
        PyUnicode_InternInPlace(&s_status[i]);
    }
    if ((s_active = PyUnicode_InternFromString("active")) == NULL
        || (s_idle = PyUnicode_InternFromString("idle")) == NULL
        || (s_client = PyUnicode_InternFromString("client")) == NULL
        || (k_select = Py_BuildValue("(ss)", "select", "00")) == NULL
        || (k_write = Py_BuildValue("(ss)", "write", "00")) == NULL
        || (empty_tuple = PyTuple_New(0)) == NULL
        || (empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL
        || (empty_str = PyUnicode_FromString("")) == NULL
        || (one = PyLong_FromLong(1)) == NULL || (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    if ((z_idle = PyBytes_FromStringAndSize("Z\0\0\0\5I", 6)) == NULL
        || (z_block = PyBytes_FromStringAndSize("Z\0\0\0\5T", 6)) == NULL
        || (done_begin = PyBytes_FromStringAndSize("C\0\0\0\12BEGIN", 11)) == NULL
        || (done_commit = PyBytes_FromStringAndSize("C\0\0\0\13COMMIT", 12)) == NULL
        || (done_rollback = PyBytes_FromStringAndSize("C\0\0\0\15ROLLBACK", 14)) == NULL
        || (ask_commit = PyBytes_FromStringAndSize("Q\0\0\0\13COMMIT", 12)) == NULL
        || (ask_rollback = PyBytes_FromStringAndSize("Q\0\0\0\15ROLLBACK", 14)) == NULL
        || (s_commit = PyUnicode_InternFromString("commit")) == NULL
        || (s_rollback = PyUnicode_InternFromString("rollback")) == NULL)
        return -1;
    return 0;
}

void
rp_clear_flight(Repeats *self)
{
    self->flight = 0;
    Py_CLEAR(self->link);
    Py_CLEAR(self->entry);
    Py_CLEAR(self->text);
    Py_CLEAR(self->data);
    Py_CLEAR(self->out);
    self->out_bytes = 0;
}

void
rp_disarm(Repeats *self)
{
    self->armed = 0;
    /* A statement still in flight ends with what it was armed with (its ReadyForQuery
     * above all): a client chunk arriving meanwhile (pipelining), a pause or a half-close
     * disarm the lane for what comes next, not for the answer already on its way. The
     * references go when the flight ends, at the next arm or with the object. */
    if (self->flight)
        return;
    Py_CLEAR(self->search_path); Py_CLEAR(self->relay); Py_CLEAR(self->hidden);
    Py_CLEAR(self->mirrored); Py_CLEAR(self->ready); Py_CLEAR(self->begin_query);
}

/* obj.name equals `value` (1), does not (0), or -1 on error */
int
rp_attr_equals(PyObject *obj, int name, PyObject *value)
{
    PyObject *v = PyObject_GetAttr(obj, names[name]);
    int r;
    if (v == NULL)
        return -1;
    r = v == value ? 1 : PyObject_RichCompareBool(v, value, Py_EQ);
    Py_DECREF(v);
    return r;
}

/* The instance dict of `obj` (a new reference), when every name in `written` is a plain
 * instance attribute there (no data descriptor on its type): reading and writing it
 * directly is then what getattr and setattr do, in a fraction of their time. NULL (no
 * error) otherwise: the generic protocol is used. */
PyObject *
rp_dict_of(PyObject *obj, const int *written, int count)
{
    PyObject *d;
    int i;
    for (i = 0; i < count; i++) {
        PyObject *found = _PyType_Lookup(Py_TYPE(obj), names[written[i]]);
        if (found != NULL && Py_TYPE(found)->tp_descr_set != NULL)
            return NULL;
    }
    d = PyObject_GenericGetDict(obj, NULL);
    if (d == NULL || !PyDict_CheckExact(d)) {
        PyErr_Clear();
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* 1 when the session may take a statement now, as far as arming does not say it */
int
rp_session_ready(Repeats *self)
{
    PyObject *out;
    int r;
    if ((r = DT(state, closed)) != 0)
        return r < 0 ? -1 : 0;
    if ((r = DT(lane, closed)) != 0)
        return r < 0 ? -1 : 0;
    if ((r = DT(port, draining)) != 0)
        return r < 0 ? -1 : 0;
    if ((r = DT(ctx, catalog_stale)) != 0)
        return r < 0 ? -1 : 0;
    if ((out = DG(state, _out)) == NULL)
        return -1;
    r = PyObject_IsTrue(out);
    Py_DECREF(out);
    return r == 0 ? 1 : r < 0 ? -1 : 0;
}

/* Keep `link`'s dict, its port and the port's dict at hand (the same link, statement after
 * statement): c_link is `link` afterwards. */
int
rp_know_link(Repeats *self, PyObject *link)
{
    static const int link_w[] = {N_status};
    static const int port_w[] = {N_consumer, N_taker};
    PyObject *port;
    if (link != self->c_link) {
        Py_XSETREF(self->c_link, Py_NewRef(link));
        Py_XSETREF(self->c_link_d, rp_dict_of(link, link_w, 1));
        Py_CLEAR(self->c_port);
        Py_CLEAR(self->c_port_d);
    }
    if ((port = rp_dget(link, self->c_link_d, N_port)) == NULL)
        return -1;
    if (port != self->c_port) {
        Py_XSETREF(self->c_port, port);
        Py_XSETREF(self->c_port_d, rp_dict_of(port, port_w, 2));
    }
    else
        Py_DECREF(port);
    return 0;
}

/* `link` is idle (PgLink.idle: not broken, nobody reading, nothing unread): 1, 0, or -1
 * with an error. It is c_link afterwards. */
int
rp_link_idle(Repeats *self, PyObject *link)
{
    PyObject *v, *wire, *buffer;
    Py_ssize_t pos, size;
    int r;
    if (rp_know_link(self, link) < 0)
        return -1;
    if ((r = rp_dtrue(link, self->c_link_d, N_broken)) != 0)
        return r < 0 ? -1 : 0;
    if ((v = PG(consumer)) == NULL)
        return -1;
    r = v != Py_None;
    Py_DECREF(v);
    if (r || (r = PT(eof)) != 0)
        return r < 0 ? -1 : 0;
    if ((wire = LG(wire)) == NULL)
        return -1;
    v = GET(wire, pos);
    buffer = GET(wire, buffer);
    Py_DECREF(wire);
    if (v == NULL || buffer == NULL || !PyByteArray_Check(buffer)) {
        Py_XDECREF(v);
        Py_XDECREF(buffer);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Repeats: the link's buffer must be a bytearray");
        return -1;
    }
    pos = PyLong_AsSsize_t(v);
    size = PyByteArray_GET_SIZE(buffer);
    Py_DECREF(v);
    Py_DECREF(buffer);
    if (pos == -1 && PyErr_Occurred())
        return -1;
    return pos == size;
}

/* The session's idle link to `route`'s source for this statement (a new reference), or
 * NULL: with an error set when one occurred. `version` is the catalog's. As
 * Lane._link, with what arming covers left out. */
PyObject *
rp_idle_link(Repeats *self, PyObject *route, PyObject *version)
{
    PyObject *source = NULL, *links = NULL, *link = NULL, *v = NULL, *epoch = NULL;
    int r, writes;
    if ((writes = rp_dtrue(route, NULL, N_writes)) < 0)
        return NULL;
    if (writes && self->writes_refused)
        return NULL;
    if ((source = GET(route, source)) == NULL)
        return NULL;
    if (writes && self->in_block) {
        PyObject *writer = DG(links, writer);
        if (writer == NULL)
            goto fail;
        r = writer == Py_None || writer == source
            ? 1 : PyObject_RichCompareBool(writer, source, Py_EQ);
        Py_DECREF(writer);
        if (r < 0)
            goto fail;
        if (!r)
            goto none;
    }
    if ((links = DG(links, links)) == NULL || !PyDict_Check(links))
        goto fail;
    link = PyDict_GetItemWithError(links, source);
    if (link == NULL)
        goto none;
    Py_INCREF(link);
    if ((r = rp_link_idle(self, link)) != 1)
        goto not_idle;
    /* the row types this catalog gives (SessionLinks.link sets them on the task) */
    if ((v = LG(row_types_for)) == NULL)
        goto fail;
    if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 2)
        goto none_link;
    r = PyObject_RichCompareBool(PyTuple_GET_ITEM(v, 0), version, Py_EQ);
    if (r == 1)
        r = PyObject_RichCompareBool(PyTuple_GET_ITEM(v, 1), self->hidden, Py_EQ);
    if (r != 1)
        goto not_idle;
    Py_CLEAR(v);
    /* statements prepared before a schema change are forgotten on the Python road */
    if ((epoch = DG(ctx, schema_epoch)) == NULL)
        goto fail;
    if ((v = LG(statements_epoch)) == NULL)
        goto fail;
    r = v == epoch ? 1 : PyObject_RichCompareBool(v, epoch, Py_EQ);
    Py_CLEAR(v);
    if (r != 1)
        goto not_idle;
    /* the link's mirrored settings are the client's (no SET to send first) */
    if ((v = LG(_mirrored)) == NULL)
        goto fail;
    r = v == self->mirrored ? 1 : PyObject_RichCompareBool(v, self->mirrored, Py_EQ);
    Py_CLEAR(v);
    if (r != 1)
        goto not_idle;
    Py_XDECREF(source); Py_XDECREF(links); Py_XDECREF(epoch);
    return link;
not_idle:
    if (r < 0)
        goto fail;
none_link:
    Py_CLEAR(link);
none:
    Py_XDECREF(source); Py_XDECREF(links); Py_XDECREF(v); Py_XDECREF(epoch);
    return NULL;
fail:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "Repeats: unexpected link state");
    Py_XDECREF(link);
    goto none;
}

/* rp_began(activity, text), as gateway.state.activity.began */
int
rp_began(Repeats *self, PyObject *text)
{
    PyObject *t, *count, *next;
    int r;
    if (DS(activity, query, text) < 0)
        return -1;
    self->started = rp_wall_now();
    if ((t = PyFloat_FromDouble(self->started)) == NULL)
        return -1;
    r = DS(activity, started, t);
    Py_DECREF(t);
    if (r < 0 || DS(activity, state, s_active) < 0)
        return -1;
    if ((count = DG(activity, statements)) == NULL)
        return -1;
    next = PyNumber_Add(count, one);
    Py_DECREF(count);
    if (next == NULL)
        return -1;
    r = DS(activity, statements, next);
    Py_DECREF(next);
    if (r < 0 || (t = PyFloat_FromDouble(rp_perf_now())) == NULL)
        return -1;
    r = DS(activity, timed, t);
    Py_DECREF(t);
    if (r < 0 || DS(activity, plan, Py_None) < 0 || DS(activity, sources, empty_tuple) < 0
        || DS(activity, figures, Py_None) < 0 || DS(activity, stream, Py_None) < 0)
        return -1;
    return 0;
}

int
rp_increment(PyObject *obj, PyObject *d, int name)
{
    PyObject *v = rp_dget(obj, d, name), *next;
    int r;
    if (v == NULL)
        return -1;
    next = PyNumber_Add(v, one);
    Py_DECREF(v);
    if (next == NULL)
        return -1;
    r = rp_dset(obj, d, name, next);
    Py_DECREF(next);
    return r;
}

/* The client's socket, if it still takes bytes: a new reference or NULL (no error) */
PyObject *
rp_client_transport(Repeats *self)
{
    PyObject *transport = DG(port, transport), *closing;
    int r;
    if (transport == NULL)
        return NULL;
    closing = PyObject_CallMethodNoArgs(transport, names[N_is_closing]);
    r = closing == NULL ? -1 : PyObject_IsTrue(closing);
    Py_XDECREF(closing);
    if (r != 0) {
        Py_DECREF(transport);
        return NULL;
    }
    return transport;
}

/* The transaction state changed here (BEGIN, or a block's end): what arming took from
 * the session follows it, as `_arm` would have it. */
int
rp_rearm(Repeats *self, int in_block, PyObject *begin_query)
{
    int refused = DT(state, writes_refused);
    if (refused < 0)
        return -1;
    self->writes_refused = refused;
    self->in_block = in_block;
    Py_XSETREF(self->begin_query, Py_NewRef(begin_query));
    Py_XSETREF(self->ready, Py_NewRef(in_block ? z_block : z_idle));
    return 0;
}

int
rp_call_method(PyObject *obj, int name)
{
    PyObject *r = PyObject_CallMethodNoArgs(obj, names[name]);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The links a transaction block reached (status not 'I'), leaving out the broken ones
 * when `skip_broken` (SessionLinks.in_transaction): how many (at most `enough`: the
 * walk stops there), the last in `found` (borrowed; may be NULL); -1 on error. */
int
rp_links_in_block(Repeats *self, int skip_broken, int enough, PyObject **found)
{
    PyObject *links, *key, *link;
    Py_ssize_t i = 0;
    int count = 0, r;
    if (found != NULL)
        *found = NULL;
    if ((links = DG(links, links)) == NULL)
        return -1;
    if (!PyDict_Check(links)) {
        Py_DECREF(links);
        PyErr_SetString(PyExc_TypeError, "Repeats: the session's links must be a dict");
        return -1;
    }
    while (count < enough && PyDict_Next(links, &i, &key, &link)) {
        PyObject *status = GET(link, status);
        if (status == NULL) {
            count = -1;
            break;
        }
        r = status == s_status['I'] ? 0 : PyObject_RichCompareBool(status, s_status['I'], Py_NE);
        Py_DECREF(status);
        if (r == 1 && skip_broken) {
            int broken = rp_dtrue(link, NULL, N_broken);
            r = broken < 0 ? -1 : !broken;
        }
        if (r < 0) {
            count = -1;
            break;
        }
        if (r == 1) {
            count++;
            if (found != NULL)
                *found = link;
        }
    }
    Py_DECREF(links);
    return count;
}

/* SessionLinks.active: the block reached a source (a writer held, or a link not idle) */
int
rp_links_active(Repeats *self)
{
    int r = DT(links, writers);
    return r != 0 ? r : rp_links_in_block(self, 0, 1, NULL);
}

/* `data` to the client's socket, unless the client is gone or its socket closing */
int
rp_send(Repeats *self, PyObject *data)
{
    PyObject *transport;
    int closed = DT(lane, closed);
    if (closed != 0)
        return closed < 0 ? -1 : 0;
    if ((transport = rp_client_transport(self)) == NULL)
        return PyErr_Occurred() ? -1 : 0;
    closed = rp_call_method1(transport, N_write, data);
    Py_DECREF(transport);
    return closed;
}

/* obj.name(arg), its result dropped: 0, or -1 with an error */
int
rp_call_method1(PyObject *obj, int name, PyObject *arg)
{
    PyObject *r = PyObject_CallMethodOneArg(obj, names[name], arg);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}
