/* What the files of the express lane's repeats in C share (gateway/relay/repeats.c says
 * what they are; repeats_session.c defines the names and constants): the attribute names they read, the constant messages, the Repeats
 * object, and their functions (rp_...). */
#ifndef FEDGATE_REPEATS_H
#define FEDGATE_REPEATS_H

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
extern PyObject *names[N_COUNT];
extern PyObject *z_idle, *z_block, *done_begin, *done_commit, *done_rollback, *ask_commit,
    *ask_rollback, *s_commit, *s_rollback;
extern PyObject *s_active, *s_idle, *s_client, *s_status[256], *k_select, *k_write,
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

/* getattr and setattr by interned name: a new reference (or 0), or NULL (-1) with an
 * error set */
#define GET(o, n) PyObject_GetAttr((o), names[N_##n])
#define SET(o, n, v) PyObject_SetAttr((o), names[N_##n], (v))
/* The same through the instance dict (rp_dict_of) of one of the lane's objects (o: lane,
 * state, links, port, activity, ctx), of the link in use (L) or of its port (P); the
 * ...T forms: the attribute's truth (1, 0, or -1) */
#define DG(o, n) rp_dget(self->o, self->o##_d, N_##n)
#define DS(o, n, v) rp_dset(self->o, self->o##_d, N_##n, (v))
#define DT(o, n) rp_dtrue(self->o, self->o##_d, N_##n)
#define LG(n) rp_dget(self->c_link, self->c_link_d, N_##n)
#define LS(n, v) rp_dset(self->c_link, self->c_link_d, N_##n, (v))
#define PG(n) rp_dget(self->c_port, self->c_port_d, N_##n)
#define PS(n, v) rp_dset(self->c_port, self->c_port_d, N_##n, (v))
#define PT(n) rp_dtrue(self->c_port, self->c_port_d, N_##n)

/* What rp_control_word finds */
#define CONTROL_NONE 0
#define CONTROL_BEGIN 1
#define CONTROL_COMMIT 2
#define CONTROL_ROLLBACK 3

/* The functions of repeats_session.c, repeats_start.c and repeats_answer.c, and what
 * repeats.c shares with them */
int rp_make_constants(void);
int rp_attr_equals(PyObject *obj, int name, PyObject *value);
PyObject *rp_dict_of(PyObject *obj, const int *written, int count);
void rp_clear_flight(Repeats *self);
void rp_disarm(Repeats *self);
int rp_links_active(Repeats *self);
int rp_session_ready(Repeats *self);
int rp_know_link(Repeats *self, PyObject *link);
int rp_link_idle(Repeats *self, PyObject *link);
PyObject *rp_idle_link(Repeats *self, PyObject *route, PyObject *version);
int rp_began(Repeats *self, PyObject *text);
int rp_increment(PyObject *obj, PyObject *d, int name);
int rp_start(Repeats *self, int kind, PyObject *link, PyObject *entry, PyObject *text,
             PyObject *data, PyObject *request, int quiet, PyObject *first);
PyObject *rp_bind_head(PyObject *entry, PyObject *remote, PyObject *count);
int rp_take_query(Repeats *self, PyObject *data, const char *d, Py_ssize_t n);
PyObject *rp_relay_key(Repeats *self, PyObject *parsed, PyObject *version);
int rp_take_run(Repeats *self, PyObject *data, const unsigned char *d, Py_ssize_t n);
PyObject *rp_client_transport(Repeats *self);
int rp_is_space(unsigned char c);
int rp_control_word(const unsigned char *text, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *len);
int rp_rearm(Repeats *self, int in_block, PyObject *begin_query);
int rp_call_method(PyObject *obj, int name);
int rp_call_method1(PyObject *obj, int name, PyObject *arg);
int rp_send(Repeats *self, PyObject *data);
int rp_answer_now(Repeats *self, PyObject *first, PyObject *second);
int rp_links_in_block(Repeats *self, int skip_broken, int enough, PyObject **found);
int rp_take_control(Repeats *self, PyObject *data, const unsigned char *d, Py_ssize_t n);
PyObject *rp_handoff(Repeats *self);
PyObject *Repeats_handoff(Repeats *self, PyObject *unused);
PyObject *rp_handoff_and_pump(Repeats *self);
int rp_write_out(Repeats *self);
int rp_counted(Repeats *self, int writes, double seconds);
int rp_finish(Repeats *self);
PyObject *rp_pump(Repeats *self);
PyObject *Repeats_pump(Repeats *self, PyObject *unused);
PyObject *Repeats_take(Repeats *self, PyObject *data);

static inline double
rp_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double
rp_perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* obj.name through its dict `d` (may be NULL): a new reference, or NULL with an error */
static inline PyObject *
rp_dget(PyObject *obj, PyObject *d, int name)
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

static inline int
rp_dset(PyObject *obj, PyObject *d, int name, PyObject *value)
{
    return d != NULL ? PyDict_SetItem(d, names[name], value)
                     : PyObject_SetAttr(obj, names[name], value);
}

static inline int
rp_dtrue(PyObject *obj, PyObject *d, int name)
{
    PyObject *v = rp_dget(obj, d, name);
    int r;
    if (v == NULL)
        return -1;
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static inline uint32_t
rp_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

#endif
