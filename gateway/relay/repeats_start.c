/* The express lane's repeats in C (repeats.c): what a client's chunk starts (a repeated
 * simple Query, an extended run, BEGIN, COMMIT/ROLLBACK), as gateway/relay/hot.py and
 * express.py would. */
#include "repeats_shared.h"

/* The request is written: the statement is in flight, its answer comes to `pump`. On an
 * error nothing of the flight is left behind (the link's port, the lane's exchange), so
 * the Python road that takes the chunk over finds the link as it was. */
int
rp_start(Repeats *self, int kind, PyObject *link, PyObject *entry, PyObject *text,
         PyObject *data, PyObject *request, int quiet, PyObject *first)
{
    PyObject *transport = NULL;
    int ok = -1;
    if (rp_began(self, text) < 0 || DS(state, skipping, Py_False) < 0
        || rp_increment(self->lane, self->lane_d, N_taken) < 0)
        return -1;
    Py_XSETREF(self->out, PyList_New(0));
    if (self->out == NULL)
        return -1;
    self->out_bytes = 0;
    self->flight = 1;
    self->kind = kind;
    self->seen = 0;
    self->quiet = quiet;
    self->ready_count = 1 + quiet;
    Py_XSETREF(self->link, Py_NewRef(link));
    Py_XSETREF(self->entry, Py_NewRef(entry));
    Py_XSETREF(self->text, Py_NewRef(text));
    Py_XSETREF(self->data, Py_NewRef(data));
    if (first != NULL) {
        if (PyList_Append(self->out, first) < 0)
            goto done;
        self->out_bytes = PyBytes_GET_SIZE(first);
    }
    if (DS(lane, exchange, (PyObject *)self) < 0)
        goto done;
    if (PS(consumer, self->pump_m) < 0 || PS(taker, self->take_m) < 0
        || (transport = PG(transport)) == NULL)
        goto done;
    ok = rp_call_method1(transport, N_write, request);
done:
    Py_XDECREF(transport);
    if (ok < 0) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (PS(consumer, Py_None) < 0 || PS(taker, Py_None) < 0
            || DS(lane, exchange, Py_None) < 0)
            PyErr_Clear();  /* the first error is the one raised */
        rp_clear_flight(self);
        PyErr_Restore(type, value, traceback);
    }
    return ok;
}

/* `entry.bind_head(remote, ...)` kept on the entry: the same remote statement, the same
 * head (the Python method computes it otherwise) */
PyObject *
rp_bind_head(PyObject *entry, PyObject *remote, PyObject *count)
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
int
rp_take_query(Repeats *self, PyObject *data, const char *d, Py_ssize_t n)
{
    PyObject *body = NULL, *split = NULL, *entry, *v = NULL, *version = NULL;
    PyObject *route = NULL, *link = NULL, *key = NULL, *statements = NULL, *remote = NULL;
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
    if ((r = rp_session_ready(self)) != 1)
        goto decided;
    if ((r = rp_attr_equals(entry, N_search_path, self->search_path)) != 1)
        goto decided;
    if ((v = DG(ctx, catalog)) == NULL || (version = GET(v, version)) == NULL)
        goto done_entry;
    Py_CLEAR(v);
    if ((r = rp_attr_equals(entry, N_version, version)) != 1)
        goto decided;
    in_tx = 0;
    if (self->in_block && (in_tx = rp_links_active(self)) < 0)
        goto done_entry;
    if ((r = rp_attr_equals(entry, N_in_transaction, in_tx ? Py_True : Py_False)) != 1)
        goto decided;
    if ((route = GET(entry, route)) == NULL)
        goto done_entry;
    if ((r = rp_dtrue(route, NULL, N_writes)) < 0)
        goto done_entry;
    if (!r && PyUnicode_CompareWithASCIIString(self->relay, "on") != 0)
        goto declined;
    link = rp_idle_link(self, route, version);
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
    remote = PyDict_GetItemWithError(statements, key);  /* held: calls below run Python */
    if (remote == NULL) {
        if (PyErr_Occurred())
            goto done_entry;
        goto declined;
    }
    Py_INCREF(remote);
    if (self->in_block) {  /* BEGIN goes first to a source the block has not reached */
        if ((v = LG(status)) == NULL)
            goto done_entry;
        r = v == s_status['I'] ? 1 : PyObject_RichCompareBool(v, s_status['I'], Py_EQ);
        if (r < 0)
            goto done_entry;
        if (r) {
            if (self->begin_query == Py_None)
                goto declined;
            quiet = 1;
        }
        Py_CLEAR(v);
    }
    if ((count = PyLong_FromSsize_t(nn)) == NULL
        || (head = rp_bind_head(entry, remote, count)) == NULL)
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
    ok = rp_start(self, KIND_QUERY, link, entry, text, data, request, quiet, NULL) < 0 ? -1 : 1;
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
    Py_XDECREF(request); Py_XDECREF(text); Py_XDECREF(count); Py_XDECREF(remote);
    return ok;
}

/* The key the session's relayed statements are kept by (SessionLinks.relay_key), outside
 * a block: (query, parameter types, catalog version, search_path, fedgate.relay, False,
 * hidden). */
PyObject *
rp_relay_key(Repeats *self, PyObject *parsed, PyObject *version)
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
int
rp_take_run(Repeats *self, PyObject *data, const unsigned char *d, Py_ssize_t n)
{
    PyObject *keyed = NULL, *entry = NULL, *prepared = NULL, *v = NULL, *version = NULL;
    PyObject *route = NULL, *link = NULL, *key = NULL, *statements = NULL, *remote = NULL;
    PyObject *head = NULL, *request = NULL, *text = NULL, *answered = NULL, *tail = NULL;
    PyObject *found;
    Py_ssize_t bind, end, params_at;
    int r, ok = -1;
    if (self->in_block || PyDict_GET_SIZE(self->runs) == 0)
        return 0;
    bind = d[0] == 'P' ? 1 + (Py_ssize_t)rp_be32(d + 1) : d[0] == 'B' ? 0 : -1;
    if (bind < 0 || bind + 5 > n || d[bind] != 'B')
        return 0;
    end = bind + 1 + (Py_ssize_t)rp_be32(d + bind + 1);
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
    if ((r = rp_dtrue(entry, NULL, N_limited)) != 0)
        goto decided;  /* a row limit: the general road */
    if ((r = rp_session_ready(self)) != 1)
        goto decided;
    if ((v = DG(ctx, catalog)) == NULL || (version = GET(v, version)) == NULL)
        goto done;
    Py_CLEAR(v);
    if ((prepared = GET(entry, prepared)) == NULL || (v = GET(entry, parsed)) == NULL)
        goto done;
    /* the Parse must find the statement the run found, or the Bind must name it */
    if (v != Py_None) {
        PyObject *relayed, *k = rp_relay_key(self, v, version);
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
    link = rp_idle_link(self, route, version);
    if (link == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto declined;
    }
    if ((key = GET(entry, remote_key)) == NULL || (statements = LG(statements)) == NULL)
        goto done;
    remote = PyDict_GetItemWithError(statements, key);  /* held: calls below run Python */
    if (remote == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto declined;
    }
    Py_INCREF(remote);
    if ((head = rp_bind_head(entry, remote, NULL)) == NULL || (tail = GET(entry, tail)) == NULL
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
    ok = rp_start(self, KIND_RUN, link, entry, text, data, request, 0, answered) < 0 ? -1 : 1;
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
    Py_XDECREF(answered); Py_XDECREF(tail); Py_XDECREF(remote);
    return ok;
}

/* What str.strip() strips among ASCII characters (as hotsplit.c's is_space). */
int
rp_is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* BEGIN, COMMIT and ROLLBACK (as ExpressLane's `_control`): which one a Query's text is
 * (CONTROL_...), with the statement as split_statements gives it at text[*at:*at+*len]. */
int
rp_control_word(const unsigned char *text, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *len)
{
    static const struct { const char *word; int kind; } words[] = {
        {"BEGIN", CONTROL_BEGIN}, {"START TRANSACTION", CONTROL_BEGIN},
        {"COMMIT", CONTROL_COMMIT}, {"END", CONTROL_COMMIT}, {"ROLLBACK", CONTROL_ROLLBACK},
    };
    Py_ssize_t a = 0, b = n, i;
    size_t w;
    while (a < b && rp_is_space(text[a]))
        a++;
    while (b > a && rp_is_space(text[b - 1]))
        b--;
    while (b > a && text[b - 1] == ';')
        b--;
    while (b > a && rp_is_space(text[b - 1]))
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

/* The client's answer, written now (nothing in flight, nothing of Python's waiting) */
int
rp_answer_now(Repeats *self, PyObject *first, PyObject *second)
{
    PyObject *joined;
    int r;
    joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(first) + PyBytes_GET_SIZE(second));
    if (joined == NULL)
        return -1;
    memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(first), PyBytes_GET_SIZE(first));
    memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(first), PyBytes_AS_STRING(second),
           PyBytes_GET_SIZE(second));
    r = rp_send(self, joined);
    Py_DECREF(joined);
    return r;
}

/* BEGIN, COMMIT/END or ROLLBACK: 1 answered or started, 0 not taken, -1 error. As
 * ExpressLane._control, for a block that reached at most one source link. */
int
rp_take_control(Repeats *self, PyObject *data, const unsigned char *d, Py_ssize_t n)
{
    Py_ssize_t at, len;
    int kind = rp_control_word(d + 5, n - 6, &at, &len), r, count;
    PyObject *sql, *link, *v;
    if (kind == CONTROL_NONE || (kind == CONTROL_BEGIN) == self->in_block)
        return 0;  /* BEGIN in a block (a warning) or an end outside one: Python's */
    if ((r = rp_session_ready(self)) != 1)
        return r;
    if (kind != CONTROL_BEGIN) {
        if ((r = DT(links, writers)) != 0 || (r = DT(links, ddl)) != 0)
            return r < 0 ? -1 : 0;
        if ((count = rp_links_in_block(self, 1, 2, &link)) < 0)
            return -1;
        if (count > 1)
            return 0;
        if (count == 1 && (r = rp_link_idle(self, link)) != 1)
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
        r = DS(state, skipping, Py_False) < 0 || rp_began(self, sql) < 0
            || DS(links, begin_sql, sql) < 0 || rp_call_method(self->state, N_begin_block) < 0
            || DS(activity, state, s_idle) < 0 || DS(activity, stream, Py_None) < 0
            || rp_increment(self->lane, self->lane_d, N_taken) < 0
            || rp_rearm(self, 1, begin_query) < 0
            || rp_answer_now(self, done_begin, z_block) < 0;
        Py_DECREF(begin_query);
        Py_DECREF(sql);
        self->taken += !r;
        return r ? -1 : 1;
    }
    self->rollback = kind == CONTROL_ROLLBACK;
    if (count == 0) {  /* the block reached no source: nothing to end there */
        r = DS(state, skipping, Py_False) < 0 || rp_began(self, sql) < 0
            || rp_increment(self->lane, self->lane_d, N_taken) < 0
            || DS(links, writer, Py_None) < 0 || rp_call_method(self->state, N_end_block) < 0
            || DS(activity, state, s_idle) < 0 || DS(activity, stream, Py_None) < 0
            || rp_rearm(self, 0, Py_None) < 0
            || rp_answer_now(self, self->rollback ? done_rollback : done_commit, z_idle) < 0;
        Py_DECREF(sql);
        self->taken += !r;
        return r ? -1 : 1;
    }
    v = self->rollback ? s_rollback : s_commit;
    r = rp_start(self, KIND_END, link, v, sql, data,
                 self->rollback ? ask_rollback : ask_commit, 0, NULL);
    Py_DECREF(sql);
    self->taken += r == 0;
    return r < 0 ? -1 : 1;
fail:
    Py_DECREF(sql);
    return -1;
}
