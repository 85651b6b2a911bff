/* libdirectcoll: verified directcoll schedules inside unmodified MPI programs, through the PMPI profiling interface
 * (docs/runtime.md, "The native runtime"; MPI 4.1 standard, Ch. 15, "The MPI Profiling Interface").
 *
 *   LD_PRELOAD=$(directcoll native lib) DIRECTCOLL_SCHEDULES=tuning.json mpiexec -n 4 ./app
 *
 * MPI_Allreduce (and MPI_Reduce_scatter_block, MPI_Allgather, MPI_Alltoall, MPI_Bcast, MPI_Reduce) runs the program
 * the tuning table names for the communicator's size and the call's bytes (MPI_Bcast and MPI_Reduce: and root);
 * every other call falls through to the PMPI_ call: user-defined ops, derived or unsupported datatypes,
 * intercommunicators, sizes no entry covers, roots no program is compiled for. DIRECTCOLL_DEBUG=1 logs one line per call to stderr.
 *
 * State: one configuration, read once (pthread_once) and never written again; everything per communicator lives in
 * an attribute of that communicator (MPI_Comm_create_keyval): a private duplicate for our messages, and the plans
 * compiled for each (program, count, datatype) it ran, most recently used first.
 *
 * ABI: the library is compiled with the mpi.h of the MPI it was built for and records that MPI's library version
 * string (dc_build.h); at first use it compares it with MPI_Get_library_version of the MPI it runs on and refuses
 * (everything falls through, one line on stderr) when they differ.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dc_build.h"
#include "dc_internal.h"

#define DC_EXPORT __attribute__((visibility("default")))
#define MAX_PLANS 8

typedef struct {
    int enabled;              /* 0: every call falls through, for `reason` */
    int debug;
    char reason[600];
    dc_entry *entries;
    size_t nentries;
    int keyval;
    int transport;            /* DIRECTCOLL_TRANSPORT: DC_TRANSPORT_AUTO (default), _SHM or _MPI */
    int shm_cells;            /* the channels' geometry (DC_SHM_CELLS, DC_SHM_CELL_BYTES unless overridden) */
    size_t shm_cell_bytes;
} dc_config;

static dc_config config;      /* written once, by init_config under config_once */
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static atomic_int config_done;

typedef struct {
    MPI_Comm comm;            /* our private duplicate of the user's communicator */
    int rank, size, usable;
    char reason[300];
    dc_plan *plans;           /* most recently used first, at most MAX_PLANS */
    dc_shm *shm;              /* the shared-memory channels of its ranks (dc_shm.c), NULL: MPI point-to-point */
    char shm_why[200];        /* why there are none */
} comm_state;

static int delete_state(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)extra;
    comm_state *s = value;
    while (s->plans) {
        dc_plan *next = s->plans->next;
        dc_plan_free(s->plans);
        s->plans = next;
    }
    dc_shm_close(s->shm);  /* collective, as the deletion of the attribute is */
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (s->comm != MPI_COMM_NULL && !finalized) PMPI_Comm_free(&s->comm);
    free(s);
    return MPI_SUCCESS;
}

/* a positive integer from the environment, else fallback (for tests and measurements) */
static long long env_count(const char *name, long long fallback) {
    const char *v = getenv(name);
    char *end = NULL;
    long long n = v && v[0] ? strtoll(v, &end, 10) : 0;
    return n > 0 && end && *end == '\0' ? n : fallback;
}

static void init_config(void) {
    const char *debug = getenv("DIRECTCOLL_DEBUG");
    config.debug = debug && debug[0] && strcmp(debug, "0") != 0;
    const char *seg = getenv("DIRECTCOLL_SEGMENT_BYTES");  /* for tests and measurements; a positive integer */
    char *end = NULL;
    long long bytes = seg && seg[0] ? strtoll(seg, &end, 10) : 0;
    if (bytes > 0 && end && *end == '\0') dc_segment_bytes = bytes;
    config.keyval = MPI_KEYVAL_INVALID;
    const char *transport = getenv("DIRECTCOLL_TRANSPORT");
    config.transport = !transport || !transport[0] || strcmp(transport, "auto") == 0 ? DC_TRANSPORT_AUTO
                       : strcmp(transport, "shm") == 0                              ? DC_TRANSPORT_SHM
                       : strcmp(transport, "mpi") == 0                              ? DC_TRANSPORT_MPI
                                                                                    : -1;
    config.shm_cells = (int)env_count("DIRECTCOLL_SHM_CELLS", DC_SHM_CELLS);
    config.shm_cell_bytes = (size_t)env_count("DIRECTCOLL_SHM_CELL_BYTES", (long long)DC_SHM_CELL_BYTES);
    char running[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int len = 0;
    PMPI_Get_library_version(running, &len);
    running[len < 0 ? 0 : len > MPI_MAX_LIBRARY_VERSION_STRING ? MPI_MAX_LIBRARY_VERSION_STRING : len] = '\0';
    const char *path = getenv("DIRECTCOLL_SCHEDULES");
    if (strcmp(running, DC_BUILT_MPI_VERSION) != 0) {
        int nb = (int)strcspn(DC_BUILT_MPI_VERSION, "\n"), nr = (int)strcspn(running, "\n");  /* first lines */
        snprintf(config.reason, sizeof config.reason, "libdirectcoll was built for another MPI library (%.*s) than "
                 "the one running (%.*s); rebuild it against this MPI: `directcoll native lib` (with MPICC naming its "
                 "mpicc)", nb < 150 ? nb : 150, DC_BUILT_MPI_VERSION, nr < 150 ? nr : 150, running);
        fprintf(stderr, "directcoll: refusing to run: %s; every collective falls through to the MPI library\n",
                config.reason);
    } else if (!path || !path[0]) {
        snprintf(config.reason, sizeof config.reason, "DIRECTCOLL_SCHEDULES is not set");
    } else if (config.transport < 0) {
        snprintf(config.reason, sizeof config.reason, "DIRECTCOLL_TRANSPORT is %.40s, not auto, shm or mpi", transport);
        fprintf(stderr, "directcoll: %s; every collective falls through to the MPI library\n", config.reason);
    } else if (dc_table_load(path, &config.entries, &config.nentries, config.reason, sizeof config.reason) != 0) {
        fprintf(stderr, "directcoll: %s; every collective falls through to the MPI library\n", config.reason);
    } else if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &config.keyval, NULL) != MPI_SUCCESS) {
        snprintf(config.reason, sizeof config.reason, "cannot create an attribute key");
    } else {
        config.enabled = 1;
        for (size_t i = 0; i < config.nentries; i++) {
            dc_entry *e = &config.entries[i];
            e->program = dc_program_load(e->path, e->error, sizeof e->error);
            if (e->program && (e->program->collective != e->collective || (int)e->program->nranks != e->ranks)) {
                snprintf(e->error, sizeof e->error, "%s holds a program of %s for %u ranks; its table entry says %s "
                         "on %d ranks", e->path, dc_collective_name(e->program->collective), e->program->nranks,
                         dc_collective_name(e->collective), e->ranks);
                dc_program_free(e->program);
                e->program = NULL;
            }
            if (!e->program) fprintf(stderr, "directcoll: %s; calls it covers fall through\n", e->error);
        }
    }
    atomic_store(&config_done, 1);
}

/* The state of comm, made on its first served call (collective: every rank makes the same decision to get here).
 * The ranks agree that each loaded the same programs for this size, else the communicator falls through. */
static comm_state *state_of(MPI_Comm comm, int size) {
    comm_state *s = NULL;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, config.keyval, &s, &found) == MPI_SUCCESS && found) return s;
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->comm = MPI_COMM_NULL;
    s->size = size;
    PMPI_Comm_rank(comm, &s->rank);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < config.nentries; i++) {
        const dc_entry *e = &config.entries[i];
        if (e->ranks != size) continue;
        h = (h ^ (e->program ? e->program->checksum : 0)) * 1099511628211ull;
    }
    unsigned long long mine[2] = {h, ~h}, all[2] = {0, 0};
    if (PMPI_Comm_dup(comm, &s->comm) != MPI_SUCCESS ||
        PMPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, s->comm) != MPI_SUCCESS) {
        snprintf(s->reason, sizeof s->reason, "cannot set up a private communicator");
    } else if (all[0] != mine[0] || all[1] != mine[1]) {
        snprintf(s->reason, sizeof s->reason, "the ranks did not load the same programs for %d ranks "
                 "(DIRECTCOLL_SCHEDULES or a program file differs between them)", size);
    } else {
        s->usable = 1;
        /* the channels, collectively at the same point (every rank here decided alike); NULL: point-to-point */
        s->shm = dc_shm_open(s->comm, config.transport, config.shm_cell_bytes, config.shm_cells >= 1 ?
                             config.shm_cells : 1, DC_SHM_BUDGET, s->shm_why, sizeof s->shm_why);
    }
    PMPI_Comm_set_attr(comm, config.keyval, s);
    return s;
}

/* the first entry of the table for this collective, size and byte count */
static const dc_entry *select_entry(uint32_t collective, int size, double bytes) {
    for (size_t i = 0; i < config.nentries; i++) {
        const dc_entry *e = &config.entries[i];
        if (e->collective == collective && e->ranks == size && bytes >= e->min_bytes &&
            (e->max_bytes < 0 || bytes <= e->max_bytes))
            return e;
    }
    return NULL;
}

/* broadcast and reduce: the first entry of the table for this collective, size and byte count whose program is
 * compiled for root, else the first one for any root (its program then refuses the call, naming its root) */
static const dc_entry *select_rooted(uint32_t collective, int size, double bytes, int root) {
    for (size_t i = 0; i < config.nentries; i++) {
        const dc_entry *e = &config.entries[i];
        if (e->collective == collective && e->ranks == size && bytes >= e->min_bytes &&
            (e->max_bytes < 0 || bytes <= e->max_bytes) && e->program && (int)e->program->root == root)
            return e;
    }
    return select_entry(collective, size, bytes);
}

/* the plan of program p for (count, datatype), built on first use and cached, most recently used first */
static dc_plan *plan_of(comm_state *s, const dc_program *p, int64_t count, MPI_Datatype datatype, MPI_Aint extent,
                        int from_send, char *err, size_t errlen) {
    dc_plan **link = &s->plans;
    size_t depth = 0;
    for (dc_plan *q = s->plans; q; link = &q->next, q = q->next, depth++) {
        if (q->program == p && q->count == count && q->datatype == datatype && q->from_send == from_send) {
            *link = q->next;  /* move it to the front */
            q->next = s->plans;
            s->plans = q;
            return q;
        }
    }
    dc_plan *plan = dc_plan_build(p, s->rank, count, datatype, extent, from_send, err, errlen);
    if (!plan) return NULL;
    if (s->shm) plan->shm_why = dc_shm_attach(s->shm, plan, s->rank);
    plan->next = s->plans;
    s->plans = plan;
    if (depth + 1 > MAX_PLANS) {  /* drop the least recently used */
        dc_plan *q = s->plans;
        while (q->next && q->next->next) q = q->next;
        dc_plan_free(q->next);
        q->next = NULL;
    }
    return plan;
}

static void gather(char *to, const dc_seg *runs, size_t n, char *const base[3], MPI_Aint extent) {
    for (size_t i = 0; i < n; i++) {
        memcpy(to, base[runs[i].region] + runs[i].off * extent, (size_t)(runs[i].len * extent));
        to += runs[i].len * extent;
    }
}

/* Apply len elements at from to the runs, starting `skip` elements into them: copy, or reduce (op= where recvbuf
 * holds the cell; sendbuf (op) from on a run marked init, whose cells recvbuf does not hold yet). */
static void scatter(const char *from, const dc_seg *runs, size_t n, int64_t skip, int64_t len, char *const base[3],
                    MPI_Aint extent, int op, dc_reduce_fn fn) {
    for (size_t i = 0; i < n && len > 0; i++) {
        if (skip >= runs[i].len) {
            skip -= runs[i].len;
            continue;
        }
        int64_t k = runs[i].len - skip < len ? runs[i].len - skip : len, at = runs[i].off + skip;
        char *to = base[runs[i].region] + at * extent;
        if (op == DC_COPY) memcpy(to, from, (size_t)(k * extent));
        else fn(to, runs[i].init ? base[2] + at * extent : to, from, (size_t)k);
        from += k * extent;
        len -= k;
        skip = 0;
    }
}

/* Apply a staged received message at from to its destination runs: in order, or slice by slice when its pieces
 * overlap at the sender (each piece from its offset in the message, dc_slice). */
static void apply_recv(const char *from, const dc_msg *m, char *const base[3], MPI_Aint extent, int op,
                       dc_reduce_fn fn) {
    if (m->nslice == 0) {
        scatter(from, m->dst, m->ndst, 0, m->len, base, extent, op, fn);
        return;
    }
    for (size_t k = 0, skip = 0; k < m->nslice; skip += (size_t)m->slice[k].len, k++)
        scatter(from + m->slice[k].at * extent, m->dst, m->ndst, (int64_t)skip, m->slice[k].len, base, extent, op, fn);
}

/* Post segment g of message m (a receive, or a send when sending) from / into its place, or into buf when not
 * NULL (a window slot). */
static int post(const dc_msg *m, int g, int sending, char *const base[3], char *stage, char *buf, MPI_Datatype datatype,
                MPI_Aint extent, int tag, MPI_Comm comm, MPI_Request *req) {
    const int64_t first = (int64_t)g * m->seglen;
    int n = (int)(m->len - first < m->seglen ? m->len - first : m->seglen);
    MPI_Datatype type = datatype;
    if (buf) {
    } else if (!m->direct) {
        buf = stage + (m->stage + first) * extent;
    } else if (m->segtype) {
        buf = base[m->region];
        n = 1;
        type = m->segtype[g];
    } else if (m->type != MPI_DATATYPE_NULL) {
        buf = base[m->region];
        n = 1;
        type = m->type;
    } else {
        buf = base[m->region] + (m->off + first) * extent;
    }
    return sending ? PMPI_Isend(buf, n, type, m->peer, tag, comm, req)
                   : PMPI_Irecv(buf, n, type, m->peer, tag, comm, req);
}

/* copy runs of the user's vector from sendbuf (base[2]) to buf (base[0]) */
static void from_sendbuf(const dc_seg *runs, size_t n, char *const base[3], MPI_Aint extent) {
    for (size_t i = 0; i < n; i++)
        memcpy(base[0] + runs[i].off * extent, base[2] + runs[i].off * extent, (size_t)(runs[i].len * extent));
}

static int wait_for(const dc_hooks *hooks, size_t t, int n, MPI_Request *reqs) {
    if (n == 0) return MPI_SUCCESS;
    return hooks && hooks->wait ? hooks->wait(hooks->ctx, t, n, reqs) : PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}

/* The next segment of a step's reduced receives after cursor (*msg, *seg), in message order: its message, and its
 * index in *g. */
static const dc_msg *next_reduced(const dc_step *st, size_t *msg, int *seg, int *g) {
    while (st->recv[*msg].op != DC_REDUCE || *seg >= st->recv[*msg].nseg) {
        (*msg)++;
        *seg = 0;
    }
    *g = (*seg)++;
    return &st->recv[*msg];
}

/* A pipelined step's reduced receives: their segments in message order, DC_WINDOW in flight, each received into a
 * window slot and reduced into place as soon as it arrives (while it is in cache and the next ones travel). */
static int reduce_pipelined(const dc_plan *plan, const dc_step *st, size_t t, char *const base[3], int tag,
                            MPI_Comm comm, dc_reduce_fn fn, const dc_hooks *hooks, MPI_Request *win) {
    const MPI_Aint x = plan->extent;
    int64_t slot = 0;  /* elements per window slot: the longest segment */
    size_t total = 0, pmsg = 0, dmsg = 0;
    int pseg = 0, dseg = 0, g = 0, rc = MPI_SUCCESS;
    for (size_t i = 0; i < st->nrecv; i++) {
        if (st->recv[i].op != DC_REDUCE) continue;
        total += (size_t)st->recv[i].nseg;
        slot = st->recv[i].seglen > slot ? st->recv[i].seglen : slot;
    }
    char *slots = plan->stage + plan->window * x;
    for (size_t k = 0, next = 0; k < total; k++) {
        for (; next < total && next < k + DC_WINDOW && rc == MPI_SUCCESS; next++) {  /* keep the window full */
            const dc_msg *m = next_reduced(st, &pmsg, &pseg, &g);
            rc = post(m, g, 0, base, NULL, slots + (int64_t)(next % DC_WINDOW) * slot * x, plan->datatype, x, tag,
                      comm, &win[next % DC_WINDOW]);
        }
        if (rc == MPI_SUCCESS) rc = wait_for(hooks, t, 1, &win[k % DC_WINDOW]);
        if (rc != MPI_SUCCESS) return rc;
        const dc_msg *m = next_reduced(st, &dmsg, &dseg, &g);
        const int64_t first = (int64_t)g * m->seglen;
        scatter(slots + (int64_t)(k % DC_WINDOW) * slot * x, m->dst, m->ndst, first,
                m->len - first < m->seglen ? m->len - first : m->seglen, base, x, DC_REDUCE, fn);
    }
    return rc;
}

/* Step t's messages over MPI point-to-point: post the receives and the sends (every message in its segments), wait;
 * a pipelined step reduces its received segments as they arrive. */
static int mpi_step(MPI_Comm comm, const dc_plan *plan, const dc_step *st, size_t t, char *const base[3],
                    dc_reduce_fn fn, const dc_hooks *hooks) {
    const MPI_Aint x = plan->extent;
    int nreq = 0, rc = MPI_SUCCESS, tag = (int)(t & 0x7fff);
    for (size_t i = 0; i < st->nrecv && rc == MPI_SUCCESS; i++) {
        if (st->pipelined && st->recv[i].op == DC_REDUCE) continue;
        for (int g = 0; g < st->recv[i].nseg && rc == MPI_SUCCESS; g++)
            rc = post(&st->recv[i], g, 0, base, plan->stage, NULL, plan->datatype, x, tag, comm, &plan->reqs[nreq++]);
    }
    for (size_t i = 0; i < st->nsend && rc == MPI_SUCCESS; i++)
        for (int g = 0; g < st->send[i].nseg && rc == MPI_SUCCESS; g++)
            rc = post(&st->send[i], g, 1, base, plan->stage, NULL, plan->datatype, x, tag, comm, &plan->reqs[nreq++]);
    from_sendbuf(st->init, st->ninit, base, x);  /* cells no copy or reduction of the step writes first */
    if (rc == MPI_SUCCESS && st->pipelined)
        rc = reduce_pipelined(plan, st, t, base, tag, comm, fn, hooks, plan->reqs + nreq);
    if (rc == MPI_SUCCESS) rc = wait_for(hooks, t, nreq, plan->reqs);
    return rc;
}

/* Run a plan on buf (the user's vector, count elements; with from_send, recvbuf, and sendbuf holds the input):
 * per step, pack what is staged, move the step's messages, then apply copies and then reductions (the IR's
 * bulk-synchronous semantics). Messages move over MPI point-to-point (mpi_step) or, for a plan attached to a
 * communicator's shared-memory channels, through them (dc_shm_step; the C engine's plans never are, so its hooks
 * keep their waits). Reductions a step applies as they arrive (a pipelined step; over shared memory, every step
 * whose reduced cells are neither sent in place nor copied into) come before the copies: no cell is both
 * (dc_plan_build, dc_shm_attach). hooks (NULL: none) see every step and replace PMPI_Waitall (dc_entry.c). */
int dc_execute(MPI_Comm comm, const dc_plan *plan, char *buf, const void *sendbuf, dc_reduce_fn fn,
               const dc_hooks *hooks) {
    char *const base[3] = {buf, plan->scratch, (char *)(uintptr_t)sendbuf};  /* region 2 is only read */
    const MPI_Aint x = plan->extent;
    for (size_t t = 0; t < plan->nsteps; t++) {
        const dc_step *st = &plan->steps[t];
        for (size_t i = 0; i < st->nsend; i++)
            if (!st->send[i].direct) gather(plan->stage + st->send[i].stage * x, st->send[i].src, st->send[i].nsrc,
                                            base, x);
        for (size_t i = 0; i < st->nlocal; i++)
            gather(plan->stage + st->local[i].stage * x, st->local[i].src, st->local[i].nsrc, base, x);
        if (hooks && hooks->step) hooks->step(hooks->ctx, t);
        int rc;
        if (plan->shm) {
            from_sendbuf(st->init, st->ninit, base, x);  /* cells no copy or reduction of the step writes first */
            rc = dc_shm_step(plan->shm, plan, st, base, fn);
        } else {
            rc = mpi_step(comm, plan, st, t, base, fn, hooks);
        }
        if (rc != MPI_SUCCESS) return rc;
        const int reduced = plan->shm ? st->shm_reduce : st->pipelined;  /* its reductions are applied already */
        for (int op = DC_COPY; op <= DC_REDUCE; op++) {  /* copies land before reductions */
            for (size_t i = 0; i < st->nrecv; i++) {
                const dc_msg *m = &st->recv[i];
                if (!m->direct && m->op == op && !(reduced && op == DC_REDUCE))
                    apply_recv(plan->stage + m->stage * x, m, base, x, op, fn);
            }
            for (size_t i = 0; i < st->nlocal; i++) {
                const dc_msg *m = &st->local[i];
                if (m->op == op) scatter(plan->stage + m->stage * x, m->dst, m->ndst, 0, m->len, base, x, op, fn);
            }
        }
    }
    from_sendbuf(plan->final, plan->nfinal, base, x);
    return MPI_SUCCESS;
}

static int execute(const comm_state *s, const dc_plan *plan, char *buf, const void *sendbuf, dc_reduce_fn fn) {
    return dc_execute(s->comm, plan, buf, sendbuf, fn, NULL);
}

/* One call's decision: served (why NULL, with its entry, state and plan) or fallen through (why says why). */
typedef struct {
    const char *coll, *opname, *why;
    char buf[300];
    int size, rank, count;
    int root;                 /* MPI_Bcast, MPI_Reduce: the call's root; -1 for the others */
    long long bytes;
    MPI_Aint extent;
    MPI_Datatype datatype;
    const dc_entry *entry;
    comm_state *state;
    dc_plan *plan;
} call;

static void log_call(const call *c) {
    if (!config.debug) return;
    const char *tname = NULL;
    dc_known_type(c->datatype, &tname);
    char what[200];
    char root[32] = "";
    if (c->root >= 0) snprintf(root, sizeof root, ", root=%d", c->root);
    snprintf(what, sizeof what, "%s(count=%d, %s%s%s%s) on %d ranks, %lld bytes", c->coll, c->count, tname,
             c->opname ? ", " : "", c->opname ? c->opname : "", root, c->size, c->bytes);
    if (c->why)
        fprintf(stderr, "directcoll: rank %d: %s: fell through: %s\n", c->rank, what, c->why);
    else if (c->plan->shm)
        fprintf(stderr, "directcoll: rank %d: %s: served by %s over shm (%s)\n", c->rank, what,
                c->entry->program->name, c->entry->path);
    else
        fprintf(stderr, "directcoll: rank %d: %s: served by %s over mpi [%s] (%s)\n", c->rank, what,
                c->entry->program->name, c->plan->shm_why ? c->plan->shm_why : c->state->shm_why, c->entry->path);
}

/* Start a call: the checks every collective shares, up to the communicator's size and the datatype's size. */
static void begin(call *c, const char *coll, MPI_Comm comm, int count, MPI_Datatype datatype, const char *opname) {
    pthread_once(&config_once, init_config);
    memset(c, 0, sizeof *c);
    c->coll = coll;
    c->opname = opname;
    c->count = count;
    c->datatype = datatype;
    c->rank = -1;
    c->root = -1;
    c->bytes = -1;
    int inter = 0, tsize = 0;
    MPI_Aint lb = 0;
    if (!config.enabled) c->why = config.reason;
    else if (comm == MPI_COMM_NULL) c->why = "MPI_COMM_NULL";
    else if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) c->why = "an intercommunicator";
    else if (count < 0) c->why = "a negative count";
    if (comm != MPI_COMM_NULL && (!c->why || config.debug)) {  /* of an intercommunicator: its local group */
        PMPI_Comm_size(comm, &c->size);
        PMPI_Comm_rank(comm, &c->rank);
    }
    if (PMPI_Type_size(datatype, &tsize) == MPI_SUCCESS) c->bytes = (long long)count * tsize;
    PMPI_Type_get_extent(datatype, &lb, &c->extent);
}

/* Finish the decision for a vector of `total` elements (bytes: the whole vector): entry, state and plan. */
static void choose(call *c, uint32_t collective, MPI_Comm comm, int64_t total, long long bytes, int from_send) {
    c->bytes = bytes;
    if (c->why) return;
    c->entry = c->root >= 0 ? select_rooted(collective, c->size, (double)bytes, c->root)
                            : select_entry(collective, c->size, (double)bytes);
    if (c->entry == NULL) {
        const char *name = dc_collective_name(collective);
        snprintf(c->buf, sizeof c->buf, "no table entry covers a%s %s on %d ranks of %lld bytes",
                 name[0] == 'a' ? "n" : "", name, c->size, bytes);
        c->why = c->buf;
    } else if (!c->entry->program) {
        c->why = c->entry->error;
    } else if (c->root >= 0 && (uint32_t)c->root != c->entry->program->root) {
        snprintf(c->buf, sizeof c->buf, "the program for a %s on %d ranks of %lld bytes (%s) is compiled for root %u, "
                 "not %d", dc_collective_name(collective), c->size, bytes, c->entry->path, c->entry->program->root,
                 c->root);
        c->why = c->buf;
    } else if ((c->state = state_of(comm, c->size)) == NULL || !c->state->usable) {
        c->why = c->state ? c->state->reason : "out of memory";
    } else if ((c->plan = plan_of(c->state, c->entry->program, total, c->datatype, c->extent, from_send, c->buf,
                                  sizeof c->buf)) == NULL) {
        c->why = c->buf;
    }
}

DC_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm) {
    call c;
    begin(&c, "MPI_Allreduce", comm, count, datatype, dc_op_name(op));
    dc_reduce_fn fn = NULL;
    if (!c.why && (fn = dc_reduction(op, datatype, &c.why)) == NULL) { /* c.why is set */ }
    else if (!c.why && sendbuf == recvbuf && count > 0) c.why = "sendbuf aliases recvbuf (use MPI_IN_PLACE)";
    const int from_send = sendbuf != MPI_IN_PLACE;  /* read sendbuf until recvbuf is written: no up-front copy */
    choose(&c, DC_ALLREDUCE, comm, count, c.bytes, from_send);
    log_call(&c);
    if (c.why) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return execute(c.state, c.plan, recvbuf, from_send ? sendbuf : NULL, fn);
}

/* MPI_Reduce_scatter_block: the schedule works in a buffer of the plan (in recvbuf itself with MPI_IN_PLACE) laid
 * out as sendbuf, whose element order is MPI's, reading sendbuf where the work buffer is not written yet (no
 * up-front copy, as the allreduce); then this rank's block moves to the start of recvbuf. */
DC_EXPORT int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm) {
    call c;
    begin(&c, "MPI_Reduce_scatter_block", comm, recvcount, datatype, dc_op_name(op));
    dc_reduce_fn fn = NULL;
    if (!c.why && (fn = dc_reduction(op, datatype, &c.why)) == NULL) { /* c.why is set */ }
    else if (!c.why && sendbuf == recvbuf && recvcount > 0) c.why = "sendbuf aliases recvbuf (use MPI_IN_PLACE)";
    int64_t total = (int64_t)recvcount * c.size;
    const int from_send = sendbuf != MPI_IN_PLACE;  /* reads sendbuf until the work copy is written: no copy */
    choose(&c, DC_REDUCE_SCATTER, comm, total, c.bytes * c.size, from_send);
    log_call(&c);
    if (c.why) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    char *work = from_send ? c.plan->work : recvbuf;
    int rc = execute(c.state, c.plan, work, from_send ? sendbuf : NULL, fn);
    if (rc == MPI_SUCCESS && recvcount > 0)
        memmove(recvbuf, work + (size_t)c.rank * (size_t)recvcount * (size_t)c.extent,
                (size_t)recvcount * (size_t)c.extent);
    return rc;
}

/* Why a copy-only collective (allgather, alltoall) cannot be served, if it cannot: sets c->why (unless set). */
static void check_copy_args(call *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype, const void *recvbuf,
                            int recvcount, MPI_Datatype recvtype) {
    const char *tname = NULL;
    if (c->why) return;
    if (!dc_known_type(recvtype, &tname)) c->why = "a derived, non-contiguous or unsupported datatype";
    else if (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount))
        c->why = "sendcount and sendtype differ from recvcount and recvtype";
    else if (sendbuf == recvbuf && recvcount > 0) c->why = "sendbuf aliases recvbuf (use MPI_IN_PLACE)";
}

/* MPI_Allgather: the schedule works in recvbuf in place (its blocks at their MPI offsets), after this rank's
 * sendbuf is copied into its block. Copies only: any predefined basic datatype the reductions know. */
DC_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm) {
    call c;
    begin(&c, "MPI_Allgather", comm, recvcount, recvtype, NULL);
    check_copy_args(&c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    int64_t total = (int64_t)recvcount * c.size;
    choose(&c, DC_ALLGATHER, comm, total, c.bytes * c.size, 0);
    log_call(&c);
    if (c.why) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (sendbuf != MPI_IN_PLACE && recvcount > 0)
        memcpy((char *)recvbuf + (size_t)c.rank * (size_t)recvcount * (size_t)c.extent, sendbuf,
               (size_t)recvcount * (size_t)c.extent);
    return execute(c.state, c.plan, recvbuf, NULL, NULL);
}

/* MPI_Alltoall: the schedule reads sendbuf (its send part; with MPI_IN_PLACE a copy of recvbuf kept in the plan),
 * writes recvbuf (its receive part) and relays through the plan's scratch; its own block is copied at the end.
 * Copies only: any predefined basic datatype the reductions know. Bytes: one rank's send buffer. */
DC_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm) {
    call c;
    begin(&c, "MPI_Alltoall", comm, recvcount, recvtype, NULL);
    check_copy_args(&c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    int64_t total = (int64_t)recvcount * c.size;
    choose(&c, DC_ALLTOALL, comm, total, c.bytes * c.size, 0);
    log_call(&c);
    if (c.why) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    const void *from = sendbuf;
    if (sendbuf == MPI_IN_PLACE) {
        if (total > 0) memcpy(c.plan->work, recvbuf, (size_t)total * (size_t)c.extent);
        from = c.plan->work;
    }
    return execute(c.state, c.plan, recvbuf, from, NULL);
}

/* MPI_Bcast: the schedule works in buffer on every rank (the root's holds the input). Copies only: any predefined
 * basic datatype the reductions know. A program serves the root it was compiled for; other roots fall through. */
DC_EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    call c;
    begin(&c, "MPI_Bcast", comm, count, datatype, NULL);
    c.root = root;
    const char *tname = NULL;
    if (!c.why && !dc_known_type(datatype, &tname)) c.why = "a derived, non-contiguous or unsupported datatype";
    else if (!c.why && (root < 0 || root >= c.size)) c.why = "a root outside the communicator";
    choose(&c, DC_BROADCAST, comm, count, c.bytes, 0);
    log_call(&c);
    if (c.why) return PMPI_Bcast(buffer, count, datatype, root, comm);
    return execute(c.state, c.plan, buffer, NULL, NULL);
}

/* MPI_Reduce: every rank reduces in a buffer that reads sendbuf until it is written (from_send, as the allreduce):
 * recvbuf at the root (with MPI_IN_PLACE recvbuf holds the input), elsewhere the plan's work buffer (recvbuf is not
 * significant there and is never touched). */
DC_EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm) {
    call c;
    begin(&c, "MPI_Reduce", comm, count, datatype, dc_op_name(op));
    c.root = root;
    dc_reduce_fn fn = NULL;
    const int at_root = c.rank == root;
    if (!c.why && (fn = dc_reduction(op, datatype, &c.why)) == NULL) { /* c.why is set */ }
    else if (!c.why && (root < 0 || root >= c.size)) c.why = "a root outside the communicator";
    else if (!c.why && at_root && sendbuf == recvbuf && count > 0) c.why = "sendbuf aliases recvbuf (use MPI_IN_PLACE)";
    else if (!c.why && !at_root && sendbuf == MPI_IN_PLACE) c.why = "MPI_IN_PLACE on a rank other than the root";
    const int from_send = sendbuf != MPI_IN_PLACE;
    choose(&c, DC_REDUCE_TO_ROOT, comm, count, c.bytes, from_send);
    log_call(&c);
    if (c.why) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    return execute(c.state, c.plan, at_root ? recvbuf : c.plan->work, from_send ? sendbuf : NULL, fn);
}

DC_EXPORT int MPI_Finalize(void) {
    if (atomic_load(&config_done) && config.keyval != MPI_KEYVAL_INVALID) {
        MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
        for (int i = 0; i < 2; i++) {
            void *value = NULL;
            int found = 0;
            if (PMPI_Comm_get_attr(comms[i], config.keyval, &value, &found) == MPI_SUCCESS && found)
                PMPI_Comm_delete_attr(comms[i], config.keyval);
        }
    }
    return PMPI_Finalize();
}

/* For tests: the element offsets of block coordinates xs[0..n) of the program at path for count elements, as a
 * plan rounds them (0), or -1 when the program does not load. */
DC_EXPORT int directcoll_element_offsets(const char *path, int64_t count, const int64_t *xs, int64_t n, int64_t *out) {
    char err[300];
    dc_program *p = dc_program_load(path, err, sizeof err);
    if (!p) return -1;
    int64_t *bounds = malloc(((size_t)p->nblocks + p->nscratch + 1) * sizeof *bounds);
    if (!bounds) {
        dc_program_free(p);
        return -1;
    }
    dc_boundaries(p, count, bounds);
    for (int64_t i = 0; i < n; i++) out[i] = dc_element(p, bounds, xs[i]);
    free(bounds);
    dc_program_free(p);
    return 0;
}

/* The MPI library version string the library was built against (the ABI check compares it at run time). */
DC_EXPORT const char *directcoll_built_mpi_version(void) { return DC_BUILT_MPI_VERSION; }
