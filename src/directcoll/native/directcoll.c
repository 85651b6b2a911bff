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
 * compiled for each (program, count, datatype) it ran, most recently used first (dc_plans.c).
 *
 * Failing safe (docs/runtime.md, "Failing safe"): whether a call is served depends on its arguments and on the
 * table and programs, which MPI and the first call's check make the same on every rank, and on whether this rank
 * could build its plan, which is its own: a call that builds a plan agrees with the other ranks on it before its
 * first message (dc_cache_plan), and a communicator's first call agrees on its state, so every rank serves a call or
 * every rank falls through. After that nothing is allocated; an MPI error is returned with no request left in flight.
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
#define MAX_PLANS 8           /* plans kept per communicator */

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
    dc_cache plans;           /* most recently used first, at most MAX_PLANS */
    dc_shm *shm;              /* the shared-memory channels of its ranks (dc_shm.c), NULL: MPI point-to-point */
    char shm_why[200];        /* why there are none */
} comm_state;

static void free_state(comm_state *s) {
    dc_cache_clear(&s->plans);
    dc_shm_close(s->shm);  /* collective, as the deletion of the attribute is */
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (s->comm != MPI_COMM_NULL && !finalized) PMPI_Comm_free(&s->comm);
    free(s);
}

static int delete_state(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)extra;
    free_state(value);
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

/* The state of comm, made on its first call that a table entry covers (collective: the ranks made the same decision
 * to get here when they read the same table, which this checks). The ranks agree, in one small reduction on comm,
 * that each could set its state up and loaded the same table entries and programs for this size: when one could not
 * (memory), no rank keeps a state and the call falls through everywhere (the next call tries again); when they
 * differ, the communicator falls through for good. NULL with *rc = MPI_SUCCESS: this call falls through (*why); an
 * MPI error in *rc otherwise. */
static comm_state *state_of(MPI_Comm comm, int size, int *rc, const char **why) {
    comm_state *s = NULL;
    int found = 0;
    *rc = MPI_SUCCESS;
    if (PMPI_Comm_get_attr(comm, config.keyval, &s, &found) == MPI_SUCCESS && found) return s;
    s = dc_calloc(1, sizeof *s);
    MPI_Comm dup = MPI_COMM_NULL;
    int duped = PMPI_Comm_dup(comm, &dup) == MPI_SUCCESS;
    uint64_t h = 1469598103934665603ull;  /* FNV-1a over this size's entries: ranges and programs */
    for (size_t i = 0; i < config.nentries; i++) {
        const dc_entry *e = &config.entries[i];
        if (e->ranks != size) continue;
        uint64_t words[4] = {e->collective, 0, 0, e->program ? e->program->checksum : 0};
        memcpy(&words[1], &e->min_bytes, sizeof e->min_bytes);
        memcpy(&words[2], &e->max_bytes, sizeof e->max_bytes);
        for (int k = 0; k < 4; k++) h = (h ^ words[k]) * 1099511628211ull;
    }
    const int ready = s && duped;
    unsigned long long mine[3] = {h, ~h, ready ? 0 : 1}, all[3] = {0, 0, 0};
    if ((*rc = PMPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm)) != MPI_SUCCESS || all[2]) {
        if (dup != MPI_COMM_NULL) PMPI_Comm_free(&dup);
        free(s);
        *why = *rc != MPI_SUCCESS ? "the ranks could not agree on the communicator's state"
               : !ready           ? "this rank could not set up the communicator's state (out of memory)"
                                  : "another rank could not set up the communicator's state (out of memory)";
        return NULL;
    }
    s->comm = dup;
    s->size = size;
    s->plans.max = MAX_PLANS;
    PMPI_Comm_rank(comm, &s->rank);
    if (all[0] != mine[0] || all[1] != mine[1]) {
        snprintf(s->reason, sizeof s->reason, "the ranks did not load the same table entries and programs for %d "
                 "ranks (DIRECTCOLL_SCHEDULES or a program file differs between them)", size);
    } else {
        s->usable = 1;
        /* the channels, collectively at the same point (every rank here decided alike); NULL: point-to-point */
        s->shm = dc_shm_open(s->comm, config.transport, config.shm_cell_bytes, config.shm_cells >= 1 ?
                             config.shm_cells : 1, DC_SHM_BUDGET, s->shm_why, sizeof s->shm_why);
    }
    if ((*rc = PMPI_Comm_set_attr(comm, config.keyval, s)) != MPI_SUCCESS) {
        free_state(s);
        *why = "cannot keep the communicator's state";
        return NULL;
    }
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
    int rc;                   /* an MPI error while deciding (the ranks' agreement failed): returned, not fallen
                                 through, since the ranks may have decided differently */
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
    if (c->rc != MPI_SUCCESS)
        fprintf(stderr, "directcoll: rank %d: %s: MPI error %d: %s\n", c->rank, what, c->rc, c->why);
    else if (c->why)
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

/* Finish the decision for a vector of `total` elements (bytes: the whole vector): entry, state and plan. A table
 * entry's program that did not load on this rank is caught by the state's check (its checksum differs), so the
 * state comes first: every rank that reads the same table gets there in the same calls. */
static void choose(call *c, uint32_t collective, MPI_Comm comm, int64_t total, long long bytes, int from_send) {
    c->bytes = bytes;
    if (c->why) return;
    c->entry = c->root >= 0 ? select_rooted(collective, c->size, (double)bytes, c->root)
                            : select_entry(collective, c->size, (double)bytes);
    const char *why = NULL;
    if (c->entry == NULL) {
        const char *name = dc_collective_name(collective);
        snprintf(c->buf, sizeof c->buf, "no table entry covers a%s %s on %d ranks of %lld bytes",
                 name[0] == 'a' ? "n" : "", name, c->size, bytes);
        c->why = c->buf;
    } else if ((c->state = state_of(comm, c->size, &c->rc, &why)) == NULL || !c->state->usable) {
        c->why = c->state ? c->state->reason : why;
    } else if (!c->entry->program) {
        c->why = c->entry->error;
    } else if (c->root >= 0 && (uint32_t)c->root != c->entry->program->root) {
        snprintf(c->buf, sizeof c->buf, "the program for a %s on %d ranks of %lld bytes (%s) is compiled for root %u, "
                 "not %d", dc_collective_name(collective), c->size, bytes, c->entry->path, c->entry->program->root,
                 c->root);
        c->why = c->buf;
    } else if ((c->plan = dc_cache_plan(&c->state->plans, c->state->comm, c->entry->program, c->state->rank, total,
                                        c->datatype, c->extent, from_send, c->state->shm, NULL, &c->rc, c->buf,
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
    if (c.rc != MPI_SUCCESS) return c.rc;
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
    if (c.rc != MPI_SUCCESS) return c.rc;
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
    if (c.rc != MPI_SUCCESS) return c.rc;
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
    if (c.rc != MPI_SUCCESS) return c.rc;
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
    if (c.rc != MPI_SUCCESS) return c.rc;
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
    if (c.rc != MPI_SUCCESS) return c.rc;
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
    if (!bounds || dc_boundaries(p, count, bounds) != 0) {
        free(bounds);
        dc_program_free(p);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) out[i] = dc_element(p, bounds, xs[i]);
    free(bounds);
    dc_program_free(p);
    return 0;
}

/* The MPI library version string the library was built against (the ABI check compares it at run time). */
DC_EXPORT const char *directcoll_built_mpi_version(void) { return DC_BUILT_MPI_VERSION; }
