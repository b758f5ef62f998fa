/* The express lane's repeats in C: a statement the lane ran before, in and out in one
 * call each way. gateway/relay/hot.py says when, and is the Python road this shortens:
 * it stays the one taken whenever this code declines, and is the whole road without
 * this build (FEDGATE_HOT_SPLIT=python), so the two must answer alike, byte for byte.
 *
 * Repeats(lane, ...) is made by the lane. Called with a chunk of the client's bytes, it
 * answers True when it started the chunk's statement itself: a simple Query of a shape
 * the lane remembers (lane._shapes), an extended run outside a transaction block
 * (lane._runs), BEGIN, or a block's COMMIT/ROLLBACK on the one source it reached, while
 * the lane is armed and the link idle. Otherwise it disarms and hands the chunk to the
 * lane's Python `offer`. While the statement runs, `take` gets the link's chunks (the
 * port's taker) and `pump` walks them (answer_pass): at the last ReadyForQuery the
 * statement is counted for /metrics and the statement log, the session is idle again in
 * pg_stat_activity and the client's answer goes out in one write. What the walk does not
 * read (an error, a new RowDescription, the source gone) or a cancel hands the statement
 * to a Python Exchange (lane._adopt) at the message that needs it.
 *
 * Armed means: since the lane last finished a statement with the session idle, no Python
 * acted for this session (the lane arms at that moment, `arm`; the client's port, the
 * session's task and the lane disarm whenever they act). What only they change (settings,
 * the transaction's state, prepared statements, the client's socket) is as the arming saw
 * it, or as this code changed it (BEGIN, COMMIT); what may change meanwhile (the catalog,
 * the links, a shutdown) is read again here for every statement, as hot.py does.
 *
 * Attributes are read through the objects' instance dicts where they are plain (dict_of),
 * the same objects and names the Python road uses.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Attribute names, interned once. */
enum {
    N_state, N_links, N_port, N_activity, N_ctx, N__shapes, N__runs, N_closed, N__out,
    N_draining, N_catalog_stale, N_catalog, N_version, N_search_path, N_in_transaction,
    N_route, N_writes, N_source, N_writer, N_broken, N_consumer, N_eof, N_wire, N_pos,
    N_buffer, N_row_types_for, N_schema_epoch, N_statements_epoch, N__mirrored, N_int4_key,
    N_statements, N_remote, N_head, N_bind_head, N_status, N_transport, N_write,
    N_skipping, N_query, N_started, N_timed, N_plan, N_sources, N_figures, N_stream,
    N_exchange, N_taken, N_pump, N_described, N__paused, N_resume, N_counts, N_total,
    N_count, N_portals, N_close_portals, N_config, N_server, N_log_min_duration_ms,
    N_held, N__continue, N_is_closing, N__adopt, N_limited, N_prepared, N_parsed,
    N_relayed, N_statement, N_remote_key, N_answered, N_tail, N_writers, N_sql, N_taker,
    N_take, N_failed, N_ddl, N_begin_sql, N_begin_block, N_end_block, N_writes_refused,
    N_COUNT
};
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
static PyObject *names[N_COUNT];
static PyObject *z_idle, *z_block, *done_begin, *done_commit, *done_rollback, *ask_commit,
    *ask_rollback, *s_commit, *s_rollback;
static PyObject *s_active, *s_idle, *s_client, *s_status[256], *k_select, *k_write,
    *empty_tuple, *empty_bytes, *empty_str, *one, *zero;

#define MAX_BUCKETS 32
#define KIND_QUERY 0
#define KIND_RUN 1
#define KIND_END 2     /* COMMIT or ROLLBACK of a block on the one source it reached */

typedef struct {
    PyObject_HEAD
    /* what the lane is made of, taken once */
    PyObject *lane, *state, *links, *port, *activity, *ctx, *shapes, *runs;
    /* their instance dicts, read and written directly (dict_of: NULL when not plain) */
    PyObject *lane_d, *state_d, *links_d, *port_d, *activity_d, *ctx_d;
    /* the link last used, its port, and their dicts (know_link) */
    PyObject *c_link, *c_link_d, *c_port, *c_port_d;
    PyObject *pump_m, *take_m;       /* self.pump, self.take */
    long log_min_ms;                 /* [server] log_min_duration_ms */
    long long taken;                 /* statements started here */
    PyObject *offer;                 /* the lane's Python offer */
    PyObject *split, *bind, *run_key, *answer_pass, *ended, *bound_tail;
    PyObject *statements_count;      /* Metrics.statements */
    PyObject *histogram;             /* Metrics.latency["express"] */
    double buckets[MAX_BUCKETS];
    int nbuckets;
    long quiet_flag, discard_flag;
    Py_ssize_t flush_bytes;
    /* the arming's snapshot */
    int armed, in_block, writes_refused;
    PyObject *search_path, *relay, *hidden, *mirrored, *ready, *begin_query;
    /* the statement in flight */
    int flight, kind, seen, quiet, ready_count, rollback;
    PyObject *link, *entry, *text, *data, *out;
    Py_ssize_t out_bytes;
    double started;
} Repeats;

static double
wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double
perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* getattr by interned name; a new reference or NULL with an error set */
#define GET(o, n) PyObject_GetAttr((o), names[N_##n])
#define SET(o, n, v) PyObject_SetAttr((o), names[N_##n], (v))

/* obj.name is true (1), false (0), or -1 on error */
static int
attr_true(PyObject *obj, int name)
{
    PyObject *v = PyObject_GetAttr(obj, names[name]);
    int r;
    if (v == NULL)
        return -1;
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* obj.name equals `value` (1), does not (0), or -1 on error */
static int
attr_equals(PyObject *obj, int name, PyObject *value)
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
static PyObject *
dict_of(PyObject *obj, const int *written, int count)
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

/* obj.name through its dict `d` (may be NULL): a new reference, or NULL with an error */
static PyObject *
dget(PyObject *obj, PyObject *d, int name)
{
    if (d != NULL) {
        PyObject *v = PyDict_GetItemWithError(d, names[name]);
        if (v != NULL)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(obj, names[name]);
}

static int
dset(PyObject *obj, PyObject *d, int name, PyObject *value)
{
    return d != NULL ? PyDict_SetItem(d, names[name], value)
                     : PyObject_SetAttr(obj, names[name], value);
}

static int
dtrue(PyObject *obj, PyObject *d, int name)
{
    PyObject *v = dget(obj, d, name);
    int r;
    if (v == NULL)
        return -1;
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

#define DG(o, n) dget(self->o, self->o##_d, N_##n)
#define DS(o, n, v) dset(self->o, self->o##_d, N_##n, (v))
#define DT(o, n) dtrue(self->o, self->o##_d, N_##n)

static int
Repeats_traverse(Repeats *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane); Py_VISIT(self->state); Py_VISIT(self->links);
    Py_VISIT(self->port); Py_VISIT(self->activity); Py_VISIT(self->ctx);
    Py_VISIT(self->shapes); Py_VISIT(self->runs); Py_VISIT(self->offer);
    Py_VISIT(self->split); Py_VISIT(self->bind); Py_VISIT(self->run_key); Py_VISIT(self->answer_pass);
    Py_VISIT(self->ended); Py_VISIT(self->bound_tail); Py_VISIT(self->statements_count);
    Py_VISIT(self->histogram); Py_VISIT(self->search_path); Py_VISIT(self->relay);
    Py_VISIT(self->hidden); Py_VISIT(self->mirrored); Py_VISIT(self->ready);
    Py_VISIT(self->begin_query); Py_VISIT(self->link); Py_VISIT(self->entry);
    Py_VISIT(self->text); Py_VISIT(self->data); Py_VISIT(self->out);
    Py_VISIT(self->lane_d); Py_VISIT(self->state_d); Py_VISIT(self->links_d);
    Py_VISIT(self->port_d); Py_VISIT(self->activity_d); Py_VISIT(self->ctx_d);
    Py_VISIT(self->c_link); Py_VISIT(self->c_link_d); Py_VISIT(self->c_port);
    Py_VISIT(self->c_port_d); Py_VISIT(self->pump_m); Py_VISIT(self->take_m);
    return 0;
}

static void
clear_flight(Repeats *self)
{
    self->flight = 0;
    Py_CLEAR(self->link);
    Py_CLEAR(self->entry);
    Py_CLEAR(self->text);
    Py_CLEAR(self->data);
    Py_CLEAR(self->out);
    self->out_bytes = 0;
}

static int
Repeats_clear(Repeats *self)
{
    clear_flight(self);
    Py_CLEAR(self->lane); Py_CLEAR(self->state); Py_CLEAR(self->links);
    Py_CLEAR(self->port); Py_CLEAR(self->activity); Py_CLEAR(self->ctx);
    Py_CLEAR(self->shapes); Py_CLEAR(self->runs); Py_CLEAR(self->offer);
    Py_CLEAR(self->split); Py_CLEAR(self->bind); Py_CLEAR(self->run_key); Py_CLEAR(self->answer_pass);
    Py_CLEAR(self->ended); Py_CLEAR(self->bound_tail); Py_CLEAR(self->statements_count);
    Py_CLEAR(self->histogram); Py_CLEAR(self->search_path); Py_CLEAR(self->relay);
    Py_CLEAR(self->hidden); Py_CLEAR(self->mirrored); Py_CLEAR(self->ready);
    Py_CLEAR(self->begin_query);
    Py_CLEAR(self->lane_d); Py_CLEAR(self->state_d); Py_CLEAR(self->links_d);
    Py_CLEAR(self->port_d); Py_CLEAR(self->activity_d); Py_CLEAR(self->ctx_d);
    Py_CLEAR(self->c_link); Py_CLEAR(self->c_link_d); Py_CLEAR(self->c_port);
    Py_CLEAR(self->c_port_d); Py_CLEAR(self->pump_m); Py_CLEAR(self->take_m);
    return 0;
}

static void
Repeats_dealloc(Repeats *self)
{
    PyObject_GC_UnTrack(self);
    Repeats_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void
disarm(Repeats *self)
{
    self->armed = 0;
    Py_CLEAR(self->search_path); Py_CLEAR(self->relay); Py_CLEAR(self->hidden);
    Py_CLEAR(self->mirrored); Py_CLEAR(self->ready); Py_CLEAR(self->begin_query);
}

/* Repeats(lane, offer, split, bind, run_key, answer_pass, ended, bound_tail, buckets,
 *         quiet_flag, discard_flag, flush_bytes) */
static int
Repeats_init(Repeats *self, PyObject *args, PyObject *kwds)
{
    PyObject *lane, *offer, *split, *bind, *run_key, *answer_pass, *ended, *bound_tail;
    PyObject *buckets;
    PyObject *metrics = NULL, *latency = NULL;
    long quiet_flag, discard_flag;
    Py_ssize_t flush_bytes, i;
    if (!PyArg_ParseTuple(args, "OOOOOOOSO!lln:Repeats", &lane, &offer, &split, &bind,
                          &run_key, &answer_pass, &ended, &bound_tail, &PyTuple_Type, &buckets,
                          &quiet_flag, &discard_flag, &flush_bytes))
        return -1;
    if (PyTuple_GET_SIZE(buckets) > MAX_BUCKETS) {
        PyErr_SetString(PyExc_ValueError, "Repeats: too many latency buckets");
        return -1;
    }
    Repeats_clear(self);
    self->nbuckets = (int)PyTuple_GET_SIZE(buckets);
    for (i = 0; i < self->nbuckets; i++) {
        self->buckets[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(buckets, i));
        if (PyErr_Occurred())
            return -1;
    }
    self->lane = Py_NewRef(lane);
    self->offer = Py_NewRef(offer);
    self->split = Py_NewRef(split);
    self->bind = Py_NewRef(bind);
    self->run_key = Py_NewRef(run_key);
    self->answer_pass = Py_NewRef(answer_pass);
    self->ended = Py_NewRef(ended);
    self->bound_tail = Py_NewRef(bound_tail);
    self->quiet_flag = quiet_flag;
    self->discard_flag = discard_flag;
    self->flush_bytes = flush_bytes;
    if ((self->state = GET(lane, state)) == NULL || (self->links = GET(lane, links)) == NULL
        || (self->port = GET(lane, port)) == NULL
        || (self->activity = GET(lane, activity)) == NULL
        || (self->shapes = GET(lane, _shapes)) == NULL || (self->runs = GET(lane, _runs)) == NULL
        || (self->ctx = DG(state, ctx)) == NULL)
        return -1;
    {
        static const int lane_w[] = {N_exchange, N_taken};
        static const int state_w[] = {N_skipping};
        static const int links_w[] = {N_writer};
        static const int activity_w[] = {N_query, N_started, N_state, N_statements, N_timed,
                                         N_plan, N_sources, N_figures, N_stream};
        self->lane_d = dict_of(lane, lane_w, 2);
        self->state_d = dict_of(self->state, state_w, 1);
        self->links_d = dict_of(self->links, links_w, 1);
        self->port_d = dict_of(self->port, NULL, 0);
        self->activity_d = dict_of(self->activity, activity_w, 9);
        self->ctx_d = dict_of(self->ctx, NULL, 0);
    }
    if ((self->pump_m = GET((PyObject *)self, pump)) == NULL
        || (self->take_m = GET((PyObject *)self, take)) == NULL)
        return -1;
    {   /* read once: the configuration is not reloaded while the gateway runs */
        PyObject *config = GET(self->ctx, config), *server, *ms;
        if (config == NULL)
            return -1;
        server = GET(config, server);
        Py_DECREF(config);
        if (server == NULL)
            return -1;
        ms = GET(server, log_min_duration_ms);
        Py_DECREF(server);
        if (ms == NULL)
            return -1;
        self->log_min_ms = PyLong_AsLong(ms);
        Py_DECREF(ms);
        if (self->log_min_ms == -1 && PyErr_Occurred())
            return -1;
    }
    if (!PyDict_CheckExact(self->shapes) || !PyDict_CheckExact(self->runs)) {
        PyErr_SetString(PyExc_TypeError, "Repeats: the lane's _shapes and _runs must be dicts");
        return -1;
    }
    metrics = PyObject_GetAttrString(self->ctx, "metrics");
    if (metrics == NULL)
        return -1;
    self->statements_count = PyObject_GetAttrString(metrics, "statements");
    latency = PyObject_GetAttrString(metrics, "latency");
    Py_DECREF(metrics);
    if (self->statements_count == NULL || latency == NULL) {
        Py_XDECREF(latency);
        return -1;
    }
    {
        PyObject *road = PyUnicode_FromString("express");
        self->histogram = road == NULL ? NULL : PyObject_GetItem(latency, road);
        Py_XDECREF(road);
    }
    Py_DECREF(latency);
    if (self->histogram == NULL)
        return -1;
    return 0;
}

/* arm(in_block, writes_refused, search_path, relay, hidden, mirrored, ready, begin_query) */
static PyObject *
Repeats_arm(Repeats *self, PyObject *args)
{
    int in_block, writes_refused;
    PyObject *search_path, *relay, *hidden, *mirrored, *ready, *begin_query;
    if (!PyArg_ParseTuple(args, "ppOOOOSO:arm", &in_block, &writes_refused, &search_path,
                          &relay, &hidden, &mirrored, &ready, &begin_query))
        return NULL;
    disarm(self);
    self->in_block = in_block;
    self->writes_refused = writes_refused;
    self->search_path = Py_NewRef(search_path);
    self->relay = Py_NewRef(relay);
    self->hidden = Py_NewRef(hidden);
    self->mirrored = Py_NewRef(mirrored);
    self->ready = Py_NewRef(ready);
    self->begin_query = Py_NewRef(begin_query);
    self->armed = 1;
    Py_RETURN_NONE;
}

static PyObject *
Repeats_disarm(Repeats *self, PyObject *unused)
{
    disarm(self);
    Py_RETURN_NONE;
}

/* links.active: the block reached a source (SessionLinks.active) */
static int
links_active(Repeats *self)
{
    PyObject *writers, *links, *key, *link;
    Py_ssize_t i = 0;
    int r;
    if ((writers = DG(links, writers)) == NULL)
        return -1;
    r = PyObject_IsTrue(writers);
    Py_DECREF(writers);
    if (r != 0)
        return r;
    if ((links = DG(links, links)) == NULL)
        return -1;
    if (!PyDict_Check(links)) {
        Py_DECREF(links);
        return -1;
    }
    r = 0;
    while (PyDict_Next(links, &i, &key, &link)) {
        PyObject *status = GET(link, status);
        if (status == NULL) {
            r = -1;
            break;
        }
        r = status != s_status['I'] && PyObject_RichCompareBool(status, s_status['I'], Py_NE);
        Py_DECREF(status);
        if (r != 0)
            break;
    }
    Py_DECREF(links);
    return r;
}

/* 1 when the session may take a statement now, as far as arming does not say it */
static int
session_ready(Repeats *self)
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
static int
know_link(Repeats *self, PyObject *link)
{
    static const int link_w[] = {N_status};
    static const int port_w[] = {N_consumer, N_taker};
    PyObject *port;
    if (link != self->c_link) {
        Py_XSETREF(self->c_link, Py_NewRef(link));
        Py_XSETREF(self->c_link_d, dict_of(link, link_w, 1));
        Py_CLEAR(self->c_port);
        Py_CLEAR(self->c_port_d);
    }
    if ((port = dget(link, self->c_link_d, N_port)) == NULL)
        return -1;
    if (port != self->c_port) {
        Py_XSETREF(self->c_port, port);
        Py_XSETREF(self->c_port_d, dict_of(port, port_w, 2));
    }
    else
        Py_DECREF(port);
    return 0;
}

#define LG(n) dget(self->c_link, self->c_link_d, N_##n)
#define LS(n, v) dset(self->c_link, self->c_link_d, N_##n, (v))
#define PG(n) dget(self->c_port, self->c_port_d, N_##n)
#define PS(n, v) dset(self->c_port, self->c_port_d, N_##n, (v))
#define PT(n) dtrue(self->c_port, self->c_port_d, N_##n)

/* `link` is idle (PgLink.idle: not broken, nobody reading, nothing unread): 1, 0, or -1
 * with an error. It is c_link afterwards. */
static int
link_idle(Repeats *self, PyObject *link)
{
    PyObject *v, *wire, *buffer;
    Py_ssize_t pos, size;
    int r;
    if (know_link(self, link) < 0)
        return -1;
    if ((r = dtrue(link, self->c_link_d, N_broken)) != 0)
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
static PyObject *
idle_link(Repeats *self, PyObject *route, PyObject *version)
{
    PyObject *source = NULL, *links = NULL, *link = NULL, *v = NULL, *epoch = NULL;
    int r, writes;
    if ((writes = attr_true(route, N_writes)) < 0)
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
            || PyObject_RichCompareBool(writer, source, Py_EQ) == 1;
        Py_DECREF(writer);
        if (!r)
            goto none;
    }
    if ((links = DG(links, links)) == NULL || !PyDict_Check(links))
        goto fail;
    link = PyDict_GetItemWithError(links, source);
    if (link == NULL)
        goto none;
    Py_INCREF(link);
    if ((r = link_idle(self, link)) != 1)
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

/* began(activity, text), as gateway.state.activity.began */
static int
began(Repeats *self, PyObject *text)
{
    PyObject *t, *count, *next;
    int r;
    if (DS(activity, query, text) < 0)
        return -1;
    self->started = wall_now();
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
    if (r < 0 || (t = PyFloat_FromDouble(perf_now())) == NULL)
        return -1;
    r = DS(activity, timed, t);
    Py_DECREF(t);
    if (r < 0 || DS(activity, plan, Py_None) < 0 || DS(activity, sources, empty_tuple) < 0
        || DS(activity, figures, Py_None) < 0 || DS(activity, stream, Py_None) < 0)
        return -1;
    return 0;
}

static int
increment(PyObject *obj, PyObject *d, int name)
{
    PyObject *v = dget(obj, d, name), *next;
    int r;
    if (v == NULL)
        return -1;
    next = PyNumber_Add(v, one);
    Py_DECREF(v);
    if (next == NULL)
        return -1;
    r = dset(obj, d, name, next);
    Py_DECREF(next);
    return r;
}

/* The request is written: the statement is in flight, its answer comes to `pump`. */
static int
start(Repeats *self, int kind, PyObject *link, PyObject *entry, PyObject *text,
      PyObject *data, PyObject *request, int quiet, PyObject *first)
{
    PyObject *transport = NULL, *r = NULL;
    int ok = -1;
    if (began(self, text) < 0 || DS(state, skipping, Py_False) < 0
        || increment(self->lane, self->lane_d, N_taken) < 0)
        return -1;
    if ((self->out = PyList_New(0)) == NULL)
        return -1;
    if (first != NULL) {
        if (PyList_Append(self->out, first) < 0)
            return -1;
        self->out_bytes = PyBytes_GET_SIZE(first);
    }
    self->flight = 1;
    self->kind = kind;
    self->seen = 0;
    self->quiet = quiet;
    self->ready_count = 1 + quiet;
    self->link = Py_NewRef(link);
    self->entry = Py_NewRef(entry);
    self->text = Py_NewRef(text);
    self->data = Py_NewRef(data);
    if (DS(lane, exchange, (PyObject *)self) < 0)
        goto done;
    if (PS(consumer, self->pump_m) < 0 || PS(taker, self->take_m) < 0
        || (transport = PG(transport)) == NULL)
        goto done;
    r = PyObject_CallMethodOneArg(transport, names[N_write], request);
    ok = r == NULL ? -1 : 0;
done:
    Py_XDECREF(transport);
    Py_XDECREF(r);
    return ok;
}

/* `entry.bind_head(remote, ...)` kept on the entry: the same remote statement, the same
 * head (the Python method computes it otherwise) */
static PyObject *
bind_head(PyObject *entry, PyObject *remote, PyObject *count)
{
    PyObject *kept = GET(entry, remote);
    if (kept == NULL)
        return NULL;
    Py_DECREF(kept);
    if (kept == remote)
        return GET(entry, head);
    if (count != NULL)
        return PyObject_CallMethodObjArgs(entry, names[N_bind_head], remote, count, NULL);
    return PyObject_CallMethodObjArgs(entry, names[N_bind_head], remote, NULL);
}

/* A simple Query of a remembered shape: 1 started, 0 not taken, -1 error. */
static int
take_query(Repeats *self, PyObject *data, const char *d, Py_ssize_t n)
{
    PyObject *body = NULL, *split = NULL, *entry, *v = NULL, *version = NULL;
    PyObject *route = NULL, *link = NULL, *key = NULL, *statements = NULL, *remote;
    PyObject *head = NULL, *request = NULL, *text = NULL, *count = NULL, *numbers;
    int r, ok = -1, in_tx, quiet = 0;
    Py_ssize_t i, nn;
    if (d[n - 1] != 0 || PyDict_GET_SIZE(self->shapes) == 0)
        return 0;
    if ((body = PyBytes_FromStringAndSize(d + 5, n - 6)) == NULL)
        return -1;
    split = PyObject_CallOneArg(self->split, body);
    Py_DECREF(body);
    if (split == NULL)
        return -1;
    if (split == Py_None || !PyTuple_Check(split) || PyTuple_GET_SIZE(split) != 3) {
        ok = 0;
        goto done;
    }
    entry = PyDict_GetItemWithError(self->shapes, PyTuple_GET_ITEM(split, 1));
    if (entry == NULL) {
        ok = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(entry);
    numbers = PyTuple_GET_ITEM(split, 2);
    if (!PyList_Check(numbers))
        goto declined;
    /* every number an int4, as the Python road types it: the key the entry keeps */
    nn = PyList_GET_SIZE(numbers);
    for (i = 0; i < nn; i++) {
        PyObject *number = PyList_GET_ITEM(numbers, i);
        Py_ssize_t len = PyBytes_GET_SIZE(number), j;
        const char *c = PyBytes_AS_STRING(number);
        if (len >= 10)
            goto declined;
        for (j = 0; j < len; j++)
            if (c[j] < '0' || c[j] > '9')
                goto declined;
    }
    if ((r = session_ready(self)) != 1)
        goto decided;
    if ((r = attr_equals(entry, N_search_path, self->search_path)) != 1)
        goto decided;
    if ((v = DG(ctx, catalog)) == NULL || (version = GET(v, version)) == NULL)
        goto done_entry;
    Py_CLEAR(v);
    if ((r = attr_equals(entry, N_version, version)) != 1)
        goto decided;
    in_tx = 0;
    if (self->in_block && (in_tx = links_active(self)) < 0)
        goto done_entry;
    if ((r = attr_equals(entry, N_in_transaction, in_tx ? Py_True : Py_False)) != 1)
        goto decided;
    if ((route = GET(entry, route)) == NULL)
        goto done_entry;
    if ((r = attr_true(route, N_writes)) < 0)
        goto done_entry;
    if (!r && PyUnicode_CompareWithASCIIString(self->relay, "on") != 0)
        goto declined;
    link = idle_link(self, route, version);
    if (link == NULL) {
        if (PyErr_Occurred())
            goto done_entry;
        goto declined;
    }
    if ((key = GET(entry, int4_key)) == NULL)
        goto done_entry;
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2
        || !PyTuple_Check(PyTuple_GET_ITEM(key, 1))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(key, 1)) != nn)
        goto declined;
    if ((statements = LG(statements)) == NULL)
        goto done_entry;
    remote = PyDict_GetItemWithError(statements, key);
    if (remote == NULL) {
        if (PyErr_Occurred())
            goto done_entry;
        goto declined;
    }
    if (self->in_block) {  /* BEGIN goes first to a source the block has not reached */
        if ((v = LG(status)) == NULL)
            goto done_entry;
        if (v == s_status['I'] || PyObject_RichCompareBool(v, s_status['I'], Py_EQ) == 1) {
            if (self->begin_query == Py_None)
                goto declined;
            quiet = 1;
        }
        Py_CLEAR(v);
    }
    if ((count = PyLong_FromSsize_t(nn)) == NULL
        || (head = bind_head(entry, remote, count)) == NULL)
        goto done_entry;
    {
        PyObject *call[3] = {head, numbers, self->bound_tail};
        request = PyObject_Vectorcall(self->bind, call, 3, NULL);
    }
    if (request == NULL)
        goto done_entry;
    if (quiet) {
        PyObject *joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(self->begin_query)
                                                     + PyBytes_GET_SIZE(request));
        if (joined == NULL)
            goto done_entry;
        memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(self->begin_query),
               PyBytes_GET_SIZE(self->begin_query));
        memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(self->begin_query),
               PyBytes_AS_STRING(request), PyBytes_GET_SIZE(request));
        Py_SETREF(request, joined);
    }
    {
        PyObject *sql = PyTuple_GET_ITEM(split, 0);
        text = PyUnicode_DecodeASCII(PyBytes_AS_STRING(sql), PyBytes_GET_SIZE(sql), NULL);
    }
    if (text == NULL)
        goto done_entry;
    ok = start(self, KIND_QUERY, link, entry, text, data, request, quiet, NULL) < 0 ? -1 : 1;
    self->taken += ok == 1;
    goto done_entry;
decided:
    if (r < 0)
        goto done_entry;
declined:
    ok = 0;
done_entry:
    Py_DECREF(entry);
done:
    Py_XDECREF(split); Py_XDECREF(v); Py_XDECREF(version); Py_XDECREF(route);
    Py_XDECREF(link); Py_XDECREF(key); Py_XDECREF(statements); Py_XDECREF(head);
    Py_XDECREF(request); Py_XDECREF(text); Py_XDECREF(count);
    return ok;
}

static uint32_t
be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* The key the session's relayed statements are kept by (SessionLinks.relay_key), outside
 * a block: (query, parameter types, catalog version, search_path, fedgate.relay, False,
 * hidden). */
static PyObject *
relay_key(Repeats *self, PyObject *parsed, PyObject *version)
{
    if (!PyTuple_Check(parsed) || PyTuple_GET_SIZE(parsed) != 2) {
        PyErr_SetString(PyExc_TypeError, "Repeats: a run's parsed must be a pair");
        return NULL;
    }
    return PyTuple_Pack(7, PyTuple_GET_ITEM(parsed, 0), PyTuple_GET_ITEM(parsed, 1), version,
                        self->search_path, self->relay, Py_False, self->hidden);
}

/* An extended run remembered by its bytes, outside a transaction block: 1 started, 0 not
 * taken, -1 error. As HotLane._hot_extended. */
static int
take_run(Repeats *self, PyObject *data, const unsigned char *d, Py_ssize_t n)
{
    PyObject *keyed = NULL, *entry = NULL, *prepared = NULL, *v = NULL, *version = NULL;
    PyObject *route = NULL, *link = NULL, *key = NULL, *statements = NULL, *remote;
    PyObject *head = NULL, *request = NULL, *text = NULL, *answered = NULL, *tail = NULL;
    PyObject *found;
    Py_ssize_t bind, end, params_at;
    int r, ok = -1;
    if (self->in_block || PyDict_GET_SIZE(self->runs) == 0)
        return 0;
    bind = d[0] == 'P' ? 1 + (Py_ssize_t)be32(d + 1) : d[0] == 'B' ? 0 : -1;
    if (bind < 0 || bind + 5 > n || d[bind] != 'B')
        return 0;
    end = bind + 1 + (Py_ssize_t)be32(d + bind + 1);
    if (end > n || end < bind + 5)
        return 0;
    {
        PyObject *call[4] = {data, NULL, NULL, NULL};
        if ((call[1] = PyLong_FromSsize_t(bind)) == NULL
            || (call[2] = PyLong_FromSsize_t(end)) == NULL
            || (call[3] = PyLong_FromSsize_t(n)) == NULL) {
            Py_XDECREF(call[1]); Py_XDECREF(call[2]);
            return -1;
        }
        keyed = PyObject_Vectorcall(self->run_key, call, 4, NULL);
        Py_DECREF(call[1]); Py_DECREF(call[2]); Py_DECREF(call[3]);
    }
    if (keyed == NULL)
        return -1;
    if (!PyTuple_Check(keyed) || PyTuple_GET_SIZE(keyed) != 2) {
        Py_DECREF(keyed);
        return 0;
    }
    params_at = PyLong_AsSsize_t(PyTuple_GET_ITEM(keyed, 1));
    if (params_at == -1 && PyErr_Occurred())
        goto done;
    entry = PyDict_GetItemWithError(self->runs, PyTuple_GET_ITEM(keyed, 0));
    if (entry == NULL) {
        ok = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(entry);
    if ((r = attr_true(entry, N_limited)) != 0)
        goto decided;  /* a row limit: the general road */
    if ((r = session_ready(self)) != 1)
        goto decided;
    if ((v = DG(ctx, catalog)) == NULL || (version = GET(v, version)) == NULL)
        goto done;
    Py_CLEAR(v);
    if ((prepared = GET(entry, prepared)) == NULL || (v = GET(entry, parsed)) == NULL)
        goto done;
    /* the Parse must find the statement the run found, or the Bind must name it */
    if (v != Py_None) {
        PyObject *relayed, *k = relay_key(self, v, version);
        if (k == NULL)
            goto done;
        relayed = DG(state, relayed);
        if (relayed == NULL) {
            Py_DECREF(k);
            goto done;
        }
        found = PyDict_Check(relayed) ? PyDict_GetItemWithError(relayed, k) : NULL;
        Py_DECREF(k);
        Py_DECREF(relayed);
    }
    else {
        PyObject *named = DG(state, statements), *name = GET(entry, statement);
        found = named != NULL && name != NULL && PyDict_Check(named)
            ? PyDict_GetItemWithError(named, name) : NULL;
        Py_XDECREF(named);
        Py_XDECREF(name);
    }
    if (PyErr_Occurred())
        goto done;
    if (found != prepared)
        goto declined;
    {   /* no portal left (Sync closed the last run's; a planner portal takes the task) */
        PyObject *portals = DG(state, portals);
        if (portals == NULL)
            goto done;
        r = PyObject_IsTrue(portals);
        Py_DECREF(portals);
        if (r != 0)
            goto decided;
    }
    if ((route = GET(prepared, route)) == NULL)
        goto done;
    link = idle_link(self, route, version);
    if (link == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto declined;
    }
    if ((key = GET(entry, remote_key)) == NULL || (statements = LG(statements)) == NULL)
        goto done;
    remote = PyDict_GetItemWithError(statements, key);
    if (remote == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto declined;
    }
    if ((head = bind_head(entry, remote, NULL)) == NULL || (tail = GET(entry, tail)) == NULL
        || (answered = GET(entry, answered)) == NULL || (text = GET(prepared, sql)) == NULL)
        goto done;
    if (!PyBytes_Check(head) || !PyBytes_Check(tail) || !PyBytes_Check(answered)) {
        PyErr_SetString(PyExc_TypeError, "Repeats: a run's bytes must be bytes");
        goto done;
    }
    {
        Py_ssize_t hn = PyBytes_GET_SIZE(head), pn = end - params_at, tn = PyBytes_GET_SIZE(tail);
        char *to;
        request = PyBytes_FromStringAndSize(NULL, 5 + hn + pn + tn);
        if (request == NULL)
            goto done;
        to = PyBytes_AS_STRING(request);
        to[0] = 'B';
        {
            uint32_t len = (uint32_t)(4 + hn + pn);
            to[1] = (char)(len >> 24); to[2] = (char)(len >> 16);
            to[3] = (char)(len >> 8); to[4] = (char)len;
        }
        memcpy(to + 5, PyBytes_AS_STRING(head), hn);
        memcpy(to + 5 + hn, d + params_at, pn);
        memcpy(to + 5 + hn + pn, PyBytes_AS_STRING(tail), tn);
    }
    if (v != Py_None) {  /* the unnamed Parse names the statement for what follows */
        PyObject *named = DG(state, statements);
        if (named == NULL)
            goto done;
        r = PyObject_SetItem(named, empty_str, prepared);
        Py_DECREF(named);
        if (r < 0)
            goto done;
    }
    ok = start(self, KIND_RUN, link, entry, text, data, request, 0, answered) < 0 ? -1 : 1;
    self->taken += ok == 1;
    goto done;
decided:
    if (r < 0)
        goto done;
declined:
    ok = 0;
done:
    Py_XDECREF(keyed); Py_XDECREF(entry); Py_XDECREF(prepared); Py_XDECREF(v);
    Py_XDECREF(version); Py_XDECREF(route); Py_XDECREF(link); Py_XDECREF(key);
    Py_XDECREF(statements); Py_XDECREF(head); Py_XDECREF(request); Py_XDECREF(text);
    Py_XDECREF(answered); Py_XDECREF(tail);
    return ok;
}

/* The client's socket, if it still takes bytes: a new reference or NULL (no error) */
static PyObject *
client_transport(Repeats *self)
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

/* BEGIN, COMMIT and ROLLBACK (as HotLane's `_control`): which one a Query's text is
 * (CONTROL_...), with the statement as split_statements gives it at text[*at:*at+*len]. */
#define CONTROL_NONE 0
#define CONTROL_BEGIN 1
#define CONTROL_COMMIT 2
#define CONTROL_ROLLBACK 3

static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int
control_word(const unsigned char *text, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *len)
{
    static const struct { const char *word; int kind; } words[] = {
        {"BEGIN", CONTROL_BEGIN}, {"START TRANSACTION", CONTROL_BEGIN},
        {"COMMIT", CONTROL_COMMIT}, {"END", CONTROL_COMMIT}, {"ROLLBACK", CONTROL_ROLLBACK},
    };
    Py_ssize_t a = 0, b = n, i;
    size_t w;
    while (a < b && is_space(text[a]))
        a++;
    while (b > a && is_space(text[b - 1]))
        b--;
    while (b > a && text[b - 1] == ';')
        b--;
    while (b > a && is_space(text[b - 1]))
        b--;
    for (w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        const char *word = words[w].word;
        if ((Py_ssize_t)strlen(word) != b - a)
            continue;
        for (i = 0; i < b - a; i++) {
            unsigned char c = text[a + i];
            if ((c >= 'a' && c <= 'z' ? c - 32 : c) != (unsigned char)word[i])
                break;
        }
        if (i == b - a) {
            *at = a;
            *len = b - a;
            return words[w].kind;
        }
    }
    return CONTROL_NONE;
}

/* The transaction state changed here (BEGIN, or a block's end): what arming took from
 * the session follows it, as `_arm` would have it. */
static int
rearm(Repeats *self, int in_block, PyObject *begin_query)
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

static int
call_method(PyObject *obj, int name)
{
    PyObject *r = PyObject_CallMethodNoArgs(obj, names[name]);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The client's answer, written now (nothing in flight, nothing of Python's waiting) */
static int
answer_now(Repeats *self, PyObject *first, PyObject *second)
{
    PyObject *transport, *joined, *r;
    int closed = DT(lane, closed);
    if (closed != 0)
        return closed < 0 ? -1 : 0;
    if ((transport = client_transport(self)) == NULL)
        return PyErr_Occurred() ? -1 : 0;
    joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(first) + PyBytes_GET_SIZE(second));
    if (joined == NULL) {
        Py_DECREF(transport);
        return -1;
    }
    memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(first), PyBytes_GET_SIZE(first));
    memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(first), PyBytes_AS_STRING(second),
           PyBytes_GET_SIZE(second));
    r = PyObject_CallMethodOneArg(transport, names[N_write], joined);
    Py_DECREF(transport);
    Py_DECREF(joined);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The source links a block reached (status not 'I', not broken): how many, and the last
 * one in `found` (borrowed) */
static int
touched_links(Repeats *self, PyObject **found)
{
    PyObject *links, *key, *link;
    Py_ssize_t i = 0;
    int count = 0, r;
    *found = NULL;
    if ((links = DG(links, links)) == NULL)
        return -1;
    if (!PyDict_Check(links)) {
        Py_DECREF(links);
        PyErr_SetString(PyExc_TypeError, "Repeats: the session's links must be a dict");
        return -1;
    }
    while (PyDict_Next(links, &i, &key, &link)) {
        PyObject *status = GET(link, status);
        if (status == NULL) {
            count = -1;
            break;
        }
        r = status == s_status['I'] ? 0 : PyObject_RichCompareBool(status, s_status['I'], Py_NE);
        Py_DECREF(status);
        if (r == 1 && (r = attr_true(link, N_broken)) == 0) {
            count++;
            *found = link;
        }
        if (r < 0) {
            count = -1;
            break;
        }
    }
    Py_DECREF(links);
    return count;
}

/* BEGIN, COMMIT/END or ROLLBACK: 1 answered or started, 0 not taken, -1 error. As
 * ExpressLane._control, for a block that reached at most one source link. */
static int
take_control(Repeats *self, PyObject *data, const unsigned char *d, Py_ssize_t n)
{
    Py_ssize_t at, len;
    int kind = control_word(d + 5, n - 6, &at, &len), r, count;
    PyObject *sql, *link, *v;
    if (kind == CONTROL_NONE || (kind == CONTROL_BEGIN) == self->in_block)
        return 0;  /* BEGIN in a block (a warning) or an end outside one: Python's */
    if ((r = session_ready(self)) != 1)
        return r;
    if (kind != CONTROL_BEGIN) {
        if ((r = DT(links, writers)) != 0 || (r = DT(links, ddl)) != 0)
            return r < 0 ? -1 : 0;
        if ((count = touched_links(self, &link)) < 0)
            return -1;
        if (count > 1)
            return 0;
        if (count == 1 && (r = link_idle(self, link)) != 1)
            return r;
    }
    if ((sql = PyUnicode_DecodeASCII((const char *)d + 5 + at, len, NULL)) == NULL)
        return -1;
    if (kind == CONTROL_BEGIN) {
        PyObject *begin_query = PyBytes_FromStringAndSize(NULL, len + 6);
        char *b;
        if (begin_query == NULL)
            goto fail;
        b = PyBytes_AS_STRING(begin_query);  /* the source's Query: BEGIN as the client said */
        b[0] = 'Q';
        b[1] = (char)((len + 5) >> 24); b[2] = (char)((len + 5) >> 16);
        b[3] = (char)((len + 5) >> 8); b[4] = (char)(len + 5);
        memcpy(b + 5, d + 5 + at, (size_t)len);
        b[5 + len] = 0;
        r = DS(state, skipping, Py_False) < 0 || began(self, sql) < 0
            || DS(links, begin_sql, sql) < 0 || call_method(self->state, N_begin_block) < 0
            || DS(activity, state, s_idle) < 0 || DS(activity, stream, Py_None) < 0
            || increment(self->lane, self->lane_d, N_taken) < 0 || rearm(self, 1, begin_query) < 0
            || answer_now(self, done_begin, z_block) < 0;
        Py_DECREF(begin_query);
        Py_DECREF(sql);
        self->taken += !r;
        return r ? -1 : 1;
    }
    self->rollback = kind == CONTROL_ROLLBACK;
    if (count == 0) {  /* the block reached no source: nothing to end there */
        r = DS(state, skipping, Py_False) < 0 || began(self, sql) < 0
            || increment(self->lane, self->lane_d, N_taken) < 0
            || DS(links, writer, Py_None) < 0 || call_method(self->state, N_end_block) < 0
            || DS(activity, state, s_idle) < 0 || DS(activity, stream, Py_None) < 0
            || rearm(self, 0, Py_None) < 0
            || answer_now(self, self->rollback ? done_rollback : done_commit, z_idle) < 0;
        Py_DECREF(sql);
        self->taken += !r;
        return r ? -1 : 1;
    }
    v = self->rollback ? s_rollback : s_commit;
    r = start(self, KIND_END, link, v, sql, data, self->rollback ? ask_rollback : ask_commit,
              0, NULL);
    Py_DECREF(sql);
    self->taken += r == 0;
    return r < 0 ? -1 : 1;
fail:
    Py_DECREF(sql);
    return -1;
}

/* The statement in flight goes on as a Python Exchange (lane._adopt): a new reference to
 * it, or NULL. What the client was to get so far goes to the session first. */
static PyObject *
handoff(Repeats *self)
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
    disarm(self);
    clear_flight(self);
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

static PyObject *
Repeats_handoff(Repeats *self, PyObject *unused)
{
    return handoff(self);
}

static PyObject *
handoff_and_pump(Repeats *self)
{
    PyObject *exchange = handoff(self), *r;
    if (exchange == NULL)
        return NULL;
    r = PyObject_CallMethodNoArgs(exchange, names[N_pump]);
    Py_DECREF(exchange);
    return r;
}

static int
write_out(Repeats *self)
{
    PyObject *joined, *transport, *r;
    int closed = DT(lane, closed);
    if (closed < 0)
        return -1;
    joined = _PyBytes_Join(empty_bytes, self->out);
    if (joined == NULL)
        return -1;
    if (PyList_SetSlice(self->out, 0, PyList_GET_SIZE(self->out), NULL) < 0) {
        Py_DECREF(joined);
        return -1;
    }
    self->out_bytes = 0;
    if (!closed && (transport = client_transport(self)) != NULL) {
        r = PyObject_CallMethodOneArg(transport, names[N_write], joined);
        Py_DECREF(transport);
        Py_DECREF(joined);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        return 0;
    }
    Py_DECREF(joined);
    return PyErr_Occurred() ? -1 : 0;
}

/* /metrics: one statement of the lane ended, as Metrics.statement_done */
static int
counted(Repeats *self, int writes, double seconds)
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
    return r < 0 ? -1 : increment(self->histogram, NULL, N_count);
}

/* The last ReadyForQuery came: as HotLane._hot_done / _hot_run_done and _finished. */
static int
finish(Repeats *self)
{
    PyObject *v = NULL, *route = NULL, *prepared = NULL, *r;
    int writes, held, ok = -1;
    double seconds = wall_now() - self->started;
    if (PS(consumer, Py_None) < 0 || PS(taker, Py_None) < 0)
        goto done;
    if ((v = PG(_paused)) == NULL)
        goto done;
    if (PyObject_IsTrue(v)) {
        r = PyObject_CallMethodOneArg(self->c_port, names[N_resume], s_client);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    Py_CLEAR(v);
    if (self->kind == KIND_END) {  /* as ExpressLane._control_done */
        if (DS(links, writer, Py_None) < 0 || call_method(self->state, N_end_block) < 0
            || rearm(self, 0, Py_None) < 0
            || PyList_Append(self->out, self->rollback ? done_rollback : done_commit) < 0)
            goto done;
        goto idle;
    }
    if (self->kind == KIND_QUERY)
        route = GET(self->entry, route);
    else if ((prepared = GET(self->entry, prepared)) != NULL)
        route = GET(prepared, route);
    if (route == NULL || (writes = attr_true(route, N_writes)) < 0)
        goto done;
    if (counted(self, writes, seconds) < 0)
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
        if (PyObject_IsTrue(v)) {
            r = PyObject_CallMethodOneArg(self->state, names[N_close_portals], Py_False);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
        }
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
    if (DS(lane, exchange, Py_None) < 0 || PyList_Append(self->out, self->ready) < 0)
        goto done;
    if ((v = DG(lane, held)) == NULL)
        goto done;
    held = PyObject_IsTrue(v);
    Py_CLEAR(v);
    if (held || DT(lane, closed)) {
        /* what the client sent meanwhile: the lane's Python takes it from here */
        PyObject *joined = _PyBytes_Join(empty_bytes, self->out);
        clear_flight(self);
        disarm(self);
        if (joined == NULL)
            goto done;
        r = PyObject_CallMethodOneArg(self->state, names[N_write], joined);
        Py_DECREF(joined);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
        r = PyObject_CallMethodNoArgs(self->lane, names[N__continue]);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
        ok = 0;
        goto done;
    }
    ok = write_out(self);
    clear_flight(self);
done:
    Py_XDECREF(v); Py_XDECREF(route); Py_XDECREF(prepared);
    return ok;
}

/* The link's consumer while a statement of ours is in flight: as Exchange.pump. */
static PyObject *
pump(Repeats *self)
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
        if (pos + 6 > size || b[pos] != 'Z' || be32(b + pos + 1) != 5)
            goto hand_off_at;  /* an error, a new description, COPY: Python reads it */
        mend = pos + 6;
        if (LS(status, s_status[b[pos + 5]]) < 0)
            goto done;
        pos = mend;
        if (++self->seen >= self->ready_count) {
            if ((v = PyLong_FromSsize_t(pos)) == NULL || SET(wire, pos, v) < 0)
                goto done;
            Py_CLEAR(v);
            if (finish(self) < 0)
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
    if (self->out_bytes >= self->flush_bytes && write_out(self) < 0)
        goto done;
    result = Py_NewRef(Py_None);
    goto done;
hand_off_at:
    if ((v = PyLong_FromSsize_t(pos)) == NULL || SET(wire, pos, v) < 0)
        goto done;
    Py_CLEAR(v);
hand_off:
    result = handoff_and_pump(self);
done:
    Py_XDECREF(wire); Py_XDECREF(buffer); Py_XDECREF(described);
    Py_XDECREF(v); Py_XDECREF(pos_obj); Py_XDECREF(flags_obj);
    return result;
}

/* `pump`, and what Exchange.pump does when its own walk fails (a bug of ours): the
 * statement goes on as a Python exchange, which ends it with the error, drops the link
 * and logs it (Exchange.failed). */
static PyObject *
Repeats_pump(Repeats *self, PyObject *unused)
{
    PyObject *r = pump(self), *type, *value, *tb, *exchange;
    if (r != NULL || !self->flight)
        return r;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    exchange = handoff(self);
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
static PyObject *
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

/* The client's chunk: started here (True), or the lane's Python offer's answer. */
static PyObject *
Repeats_call(Repeats *self, PyObject *args, PyObject *kwds)
{
    PyObject *data;
    int r = 0;
    if (!PyArg_ParseTuple(args, "O:Repeats", &data))
        return NULL;
    if (self->armed && !self->flight && PyBytes_CheckExact(data)) {
        const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
        Py_ssize_t n = PyBytes_GET_SIZE(data);
        if (n >= 6 && d[0] == 'Q' && (Py_ssize_t)be32(d + 1) + 1 == n && d[n - 1] == 0) {
            r = take_query(self, data, (const char *)d, n);
            if (r == 0)
                r = take_control(self, data, d, n);
        }
        else if (n >= 5 && (d[0] == 'P' || d[0] == 'B'))
            r = take_run(self, data, d, n);
        if (r < 0)
            return NULL;
        if (r > 0)
            Py_RETURN_TRUE;
    }
    disarm(self);  /* Python acts for the session now: it arms again when it is done */
    return PyObject_CallOneArg(self->offer, data);
}

static PyObject *
Repeats_get_link(Repeats *self, void *closure)
{
    return Py_NewRef(self->link != NULL ? self->link : Py_None);
}

static PyObject *
Repeats_get_armed(Repeats *self, void *closure)
{
    return PyBool_FromLong(self->armed);
}

static PyObject *
Repeats_get_flight(Repeats *self, void *closure)
{
    return PyBool_FromLong(self->flight);
}

static PyObject *
Repeats_get_taken(Repeats *self, void *closure)
{
    return PyLong_FromLongLong(self->taken);
}

static PyGetSetDef Repeats_getset[] = {
    {"taken", (getter)Repeats_get_taken, NULL, "Statements started here.", NULL},
    {"link", (getter)Repeats_get_link, NULL, "The link of the statement in flight, or None.", NULL},
    {"armed", (getter)Repeats_get_armed, NULL, "True while repeats are taken here.", NULL},
    {"flight", (getter)Repeats_get_flight, NULL, "True while a statement of ours runs.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Repeats_methods[] = {
    {"arm", (PyCFunction)Repeats_arm, METH_VARARGS,
     "arm(in_block, writes_refused, search_path, relay, hidden, mirrored, ready, begin_query)"},
    {"disarm", (PyCFunction)Repeats_disarm, METH_NOARGS, "Take nothing until armed again."},
    {"pump", (PyCFunction)Repeats_pump, METH_NOARGS, "The link's consumer (Exchange.pump)."},
    {"take", (PyCFunction)Repeats_take, METH_O, "The link's taker: a chunk of the answer."},
    {"handoff", (PyCFunction)Repeats_handoff, METH_NOARGS,
     "Go on with the statement in flight as a Python Exchange, and return it."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RepeatsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway.relay.repeats.Repeats",
    .tp_basicsize = sizeof(Repeats),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The express lane's repeats, in and out in one call each way.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Repeats_init,
    .tp_dealloc = (destructor)Repeats_dealloc,
    .tp_traverse = (traverseproc)Repeats_traverse,
    .tp_clear = (inquiry)Repeats_clear,
    .tp_call = (ternaryfunc)Repeats_call,
    .tp_methods = Repeats_methods,
    .tp_getset = Repeats_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gateway.relay.repeats",
    "The express lane's repeats in C (see gateway.relay.hot).", -1,
    NULL,
};

PyMODINIT_FUNC
PyInit_repeats(void)
{
    PyObject *m;
    int i;
    for (i = 0; i < N_COUNT; i++)
        if ((names[i] = PyUnicode_InternFromString(NAMES[i])) == NULL)
            return NULL;
    for (i = 0; i < 256; i++) {
        char c = (char)i;
        if ((s_status[i] = PyUnicode_DecodeLatin1(&c, 1, NULL)) == NULL)
            return NULL;
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
        return NULL;
    if ((z_idle = PyBytes_FromStringAndSize("Z\0\0\0\5I", 6)) == NULL
        || (z_block = PyBytes_FromStringAndSize("Z\0\0\0\5T", 6)) == NULL
        || (done_begin = PyBytes_FromStringAndSize("C\0\0\0\12BEGIN", 11)) == NULL
        || (done_commit = PyBytes_FromStringAndSize("C\0\0\0\13COMMIT", 12)) == NULL
        || (done_rollback = PyBytes_FromStringAndSize("C\0\0\0\15ROLLBACK", 14)) == NULL
        || (ask_commit = PyBytes_FromStringAndSize("Q\0\0\0\13COMMIT", 12)) == NULL
        || (ask_rollback = PyBytes_FromStringAndSize("Q\0\0\0\15ROLLBACK", 14)) == NULL
        || (s_commit = PyUnicode_InternFromString("commit")) == NULL
        || (s_rollback = PyUnicode_InternFromString("rollback")) == NULL)
        return NULL;
    if (PyType_Ready(&RepeatsType) < 0)
        return NULL;
    if ((m = PyModule_Create(&module)) == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Repeats", (PyObject *)&RepeatsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
