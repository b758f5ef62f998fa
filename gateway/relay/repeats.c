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
#include "repeats_shared.h"

static int
Repeats_traverse(Repeats *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane); Py_VISIT(self->state); Py_VISIT(self->links);
    Py_VISIT(self->port); Py_VISIT(self->activity); Py_VISIT(self->ctx);
    Py_VISIT(self->shapes); Py_VISIT(self->runs); Py_VISIT(self->offer);
    Py_VISIT(self->split); Py_VISIT(self->bind); Py_VISIT(self->run_key);
    Py_VISIT(self->answer_pass);
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

static int
Repeats_clear(Repeats *self)
{
    rp_clear_flight(self);
    Py_CLEAR(self->lane); Py_CLEAR(self->state); Py_CLEAR(self->links);
    Py_CLEAR(self->port); Py_CLEAR(self->activity); Py_CLEAR(self->ctx);
    Py_CLEAR(self->shapes); Py_CLEAR(self->runs); Py_CLEAR(self->offer);
    Py_CLEAR(self->split); Py_CLEAR(self->bind); Py_CLEAR(self->run_key);
    Py_CLEAR(self->answer_pass);
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
        self->lane_d = rp_dict_of(lane, lane_w, 2);
        self->state_d = rp_dict_of(self->state, state_w, 1);
        self->links_d = rp_dict_of(self->links, links_w, 1);
        self->port_d = rp_dict_of(self->port, NULL, 0);
        self->activity_d = rp_dict_of(self->activity, activity_w, 9);
        self->ctx_d = rp_dict_of(self->ctx, NULL, 0);
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
    rp_disarm(self);
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
    rp_disarm(self);
    Py_RETURN_NONE;
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
        if (n >= 6 && d[0] == 'Q' && (Py_ssize_t)rp_be32(d + 1) + 1 == n && d[n - 1] == 0) {
            r = rp_take_query(self, data, (const char *)d, n);
            if (r == 0)
                r = rp_take_control(self, data, d, n);
        }
        else if (n >= 5 && (d[0] == 'P' || d[0] == 'B'))
            r = rp_take_run(self, data, d, n);
        if (r < 0)
            return NULL;
        if (r > 0)
            Py_RETURN_TRUE;
    }
    rp_disarm(self);  /* Python acts for the session now: it arms again when it is done */
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
    {"link", (getter)Repeats_get_link, NULL, "The link of the statement in flight, or None.",
     NULL},
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
    if (rp_make_constants() < 0)
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
