/* libdirectcoll's C engine entry point: one compiled program run on a communicator with the caller's buffers,
 * datatype and op, outside the interposed MPI_ calls (docs/runtime.md, "The C engine"). directcoll.runtime.cengine
 * calls it through ctypes with the Fortran handles of mpi4py's communicator, datatype and op (MPI_Comm_f2c, ...).
 *
 *   void *p = directcoll_program_open("swing.dcp", err, sizeof err);
 *   directcoll_run(p, DC_ALLREDUCE, 0, x, y, count, MPI_Type_c2f(MPI_DOUBLE), MPI_Op_c2f(MPI_SUM),
 *                  MPI_Comm_c2f(comm), 30.0, NULL, failure, err, sizeof err);
 *
 * The plans, their cache, the ranks' agreement before the first message, the messages and the reductions are the
 * interposed library's (dc_cache_plan, dc_execute): the same code serves an unmodified program under LD_PRELOAD and
 * directcoll's Python executors. What this file adds: its own state per communicator (an attribute: a private
 * duplicate for its messages and its plan cache), a deadline on every wait, the agreement's included (tests, then
 * yields, then short naps, as directcoll.runtime.mpi.wait), the step published to a status word (directcoll run's
 * progress file), and refusals as messages rather than fall-throughs: a refusal after the agreement (a rank could not
 * build its plan) is the same on every rank.
 */
#define _GNU_SOURCE  /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dc_build.h"
#include "dc_internal.h"

#define DC_EXPORT __attribute__((visibility("default")))
#define MAX_PLANS 16          /* plans kept per communicator */
/* the return codes of directcoll_run */
enum { RUN_OK = 0, RUN_REFUSED = 1, RUN_DEADLINE = 2, RUN_MPI_ERROR = 3 };
/* a wait tests back to back for SPIN_S after it starts or after a request completed, then yields until YIELD_S,
 * then naps from FIRST_NAP_S doubling to MAX_NAP_S (the values of directcoll.runtime.mpi) */
#define SPIN_S 50e-6
#define YIELD_S 0.002
#define FIRST_NAP_S 20e-6
#define MAX_NAP_S 0.0005
/* after a deadline, how long cancelled requests are tested before the rest are handed to MPI (MPI_Request_free) */
#define ABANDON_S 0.05

typedef struct {
    MPI_Comm comm;            /* our private duplicate */
    int rank, size;
    int agree, agreed;        /* the first call's agreement (they outlive a deadline: MPI may still write them) */
    dc_cache plans;           /* most recently used first, at most MAX_PLANS */
} estate;

static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t setup = PTHREAD_MUTEX_INITIALIZER;

static void free_estate(estate *s) {
    dc_cache_clear(&s->plans);
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (s->comm != MPI_COMM_NULL && !finalized) PMPI_Comm_free(&s->comm);
    free(s);
}

static int delete_estate(MPI_Comm comm, int kv, void *value, void *extra) {
    (void)comm;
    (void)kv;
    (void)extra;
    free_estate(value);
    return MPI_SUCCESS;
}

/* At MPI_Finalize, MPI_COMM_SELF's attributes are deleted first, with MPI still whole (MPI 4.1, Sec. 11.2.4): drop
 * our state of MPI_COMM_WORLD there, while its duplicate can still be freed. */
static int at_finalize(MPI_Comm comm, int kv, void *value, void *extra) {
    (void)comm;
    (void)value;
    (void)extra;
    if (keyval != MPI_KEYVAL_INVALID) {
        void *v = NULL;
        int found = 0;
        if (PMPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &v, &found) == MPI_SUCCESS && found)
            PMPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
        PMPI_Comm_free_keyval(&keyval);
    }
    PMPI_Comm_free_keyval(&kv);
    return MPI_SUCCESS;
}

static int make_keyval(void) {
    pthread_mutex_lock(&setup);
    if (keyval == MPI_KEYVAL_INVALID) {
        int hook = MPI_KEYVAL_INVALID;
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_estate, &keyval, NULL) == MPI_SUCCESS &&
            PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &hook, NULL) == MPI_SUCCESS)
            PMPI_Comm_set_attr(MPI_COMM_SELF, hook, NULL);
    }
    pthread_mutex_unlock(&setup);
    return keyval != MPI_KEYVAL_INVALID;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wait for the n requests at most timeout seconds (<= 0: PMPI_Waitall): tests back to back while requests complete,
 * then yields, then naps; idx has room for n indices. MPI_SUCCESS, an MPI error, or DC_DEADLINE with the pending
 * requests left as they are. */
static int poll_wait(int n, MPI_Request *reqs, double timeout, int *idx) {
    if (timeout <= 0) return PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    double start = now(), active = start, nap = FIRST_NAP_S;
    int rc = MPI_SUCCESS;
    for (;;) {
        int done = 0;
        if ((rc = PMPI_Testsome(n, reqs, &done, idx, MPI_STATUSES_IGNORE)) != MPI_SUCCESS) break;
        if (done == MPI_UNDEFINED) break;  /* every request is complete (null) */
        double at = now();
        if (done > 0) {
            active = at;
            nap = FIRST_NAP_S;
        } else if (at - start >= timeout) {
            rc = DC_DEADLINE;
            break;
        } else if (at - active < SPIN_S) {
            continue;
        } else if (at - active < YIELD_S) {
            sched_yield();
        } else {
            double left = start + timeout - at, d = nap < left ? nap : left;
            struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
            nanosleep(&ts, NULL);
            nap = 2 * nap < MAX_NAP_S ? 2 * nap : MAX_NAP_S;
        }
    }
    return rc;
}

/* The state of comm, made on its first call (every rank of comm makes it in the same collective call): its private
 * duplicate comes from MPI_Comm_idup, and then the ranks agree (one small non-blocking reduction on comm) that every
 * one could set its state up, both waited for with the deadline (a rank that never calls must not hang the others
 * here either). A rank short of memory still takes part in both, so that every rank refuses together. NULL with err
 * set; *deadline = 1 when the duplicate or the agreement did not complete in time (the state is then left to MPI,
 * which may still write into it). */
static estate *state_of(MPI_Comm comm, double timeout, int *deadline, char *err, size_t errlen) {
    static MPI_Comm orphan_comm = MPI_COMM_NULL;  /* a rank without memory for its state: what MPI writes into */
    static int orphan_agree, orphan_agreed;
    estate *s = NULL;
    int found = 0;
    if (!make_keyval()) {
        snprintf(err, errlen, "cannot create an MPI attribute key");
        return NULL;
    }
    if (PMPI_Comm_get_attr(comm, keyval, &s, &found) == MPI_SUCCESS && found) return s;
    s = dc_calloc(1, sizeof *s);
    int rank = 0, size = 0, small[1];
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    MPI_Comm *dup = s ? &s->comm : &orphan_comm;
    int *mine = s ? &s->agree : &orphan_agree, *all = s ? &s->agreed : &orphan_agreed;
    *dup = MPI_COMM_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = PMPI_Comm_idup(comm, dup, &req);
    if (rc == MPI_SUCCESS) rc = poll_wait(1, &req, timeout, small);
    if (rc == MPI_SUCCESS) {
        *mine = s ? size : rank;  /* the lowest rank without its state, or size */
        rc = PMPI_Iallreduce(mine, all, 1, MPI_INT, MPI_MIN, comm, &req);
        if (rc == MPI_SUCCESS) rc = poll_wait(1, &req, timeout, small);
    }
    if (rc != MPI_SUCCESS) {
        if (rc == DC_DEADLINE) *deadline = 1;  /* s stays allocated: MPI may still write there */
        else if (s) free_estate(s);
        snprintf(err, errlen, "cannot duplicate the communicator");
        return NULL;
    }
    if (*all < size) {
        if (*dup != MPI_COMM_NULL) PMPI_Comm_free(dup);
        free(s);
        snprintf(err, errlen, "rank %d could not set up its state for the communicator (out of memory); every rank "
                 "refuses", *all);
        return NULL;
    }
    s->rank = rank;
    s->size = size;
    s->plans.max = MAX_PLANS;
    if (PMPI_Comm_set_attr(comm, keyval, s) != MPI_SUCCESS) {
        free_estate(s);
        snprintf(err, errlen, "cannot keep the state of the communicator");
        return NULL;
    }
    return s;
}

/* ---- hooks: the status word and the deadline ------------------------------------------------------------------ */
typedef struct {
    const dc_plan *plan;      /* NULL while the ranks agree on it */
    double timeout;           /* seconds per step; <= 0: none (PMPI_Waitall) */
    volatile int64_t *status; /* {beat, step} of directcoll run's status file, or NULL */
    int *failure;             /* on a deadline: step, number of peers, the peers */
    int rank, nranks;
} run_ctx;

static void on_step(void *ctx, size_t t) {
    run_ctx *c = ctx;
    if (c->status) {
        c->status[0] = c->status[0] + 1;
        c->status[1] = (int64_t)t;
    }
}

/* the wait with the deadline; past it, the failure names the step and the peers of the pending requests (for the
 * agreement before the first message, DC_SETUP_STEP: step -1, every other rank) */
static int on_wait(void *ctx, size_t t, int n, MPI_Request *reqs, const int *peers) {
    run_ctx *c = ctx;
    int small[1];
    int rc = poll_wait(n, reqs, c->timeout, n <= 1 || !c->plan ? small : c->plan->idx);
    if (rc != DC_DEADLINE) return rc;
    int np = 0;
    for (int i = 0; i < n && peers; i++) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        int peer = peers[i] / 2, seen = 0;
        for (int j = 0; j < np; j++) seen |= c->failure[2 + j] == peer;
        if (!seen && np < c->nranks) c->failure[2 + np++] = peer;
    }
    for (int r = 0; !peers && r < c->nranks; r++)
        if (r != c->rank) c->failure[2 + np++] = r;
    c->failure[0] = t == DC_SETUP_STEP ? -1 : (int)t;
    c->failure[1] = np;
    return DC_DEADLINE;
}

/* after a failed run: cancel every request in flight, complete those that complete within ABANDON_S (a receive
 * whose sender never sent), hand the rest to MPI (a send a stopped peer never takes cannot be waited for) */
static void on_abandon(void *ctx, int n, MPI_Request *reqs) {
    run_ctx *c = ctx;
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) PMPI_Cancel(&reqs[i]);
    if (c->plan) poll_wait(n, reqs, ABANDON_S, c->plan->idx);
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) PMPI_Request_free(&reqs[i]);
}

/* RUN_MPI_ERROR, with MPI's message for rc in err */
static int mpi_error(int rc, char *err, size_t errlen) {
    int len = 0;
    char text[MPI_MAX_ERROR_STRING];
    PMPI_Error_string(rc, text, &len);
    snprintf(err, errlen, "MPI error %d in the C engine: %.*s", rc, len, text);
    return RUN_MPI_ERROR;
}

/* ---- the exported entry points -------------------------------------------------------------------------------- */

/* Load and check a program file: a handle for directcoll_run, or NULL with the reason in err. */
DC_EXPORT void *directcoll_program_open(const char *path, char *err, size_t errlen) {
    return dc_program_load(path, err, errlen);
}

DC_EXPORT void directcoll_program_close(void *program) { dc_program_free(program); }

/* sizeof(MPI_Fint), for the caller's handle type */
DC_EXPORT int directcoll_fint_bytes(void) { return (int)sizeof(MPI_Fint); }

/* The file of the MPI library this library's MPI calls go to (dladdr of PMPI_Comm_size), "" if unknown: the caller
 * checks it is the MPI its own handles belong to. */
DC_EXPORT const char *directcoll_mpi_library(void) {
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&PMPI_Comm_size, &info) && info.dli_fname) return info.dli_fname;
    return "";
}

/* Run program (collective: 0 allreduce, 1 reduce_scatter = MPI_Reduce_scatter_block, 2 allgather, 3 all-to-all,
 * 4 broadcast, 5 reduce) on the communicator comm with the buffers, count, datatype and op of the MPI call it stands
 * for: count is MPI_Allreduce's, MPI_Bcast's or MPI_Reduce's count, or the recvcount of the others (elements per
 * rank's block). in_place: sendbuf is MPI_IN_PLACE (allgather: this rank's block is already in recvbuf; broadcast:
 * recvbuf is MPI_Bcast's one buffer; reduce: only at the root). Broadcast and reduce run for the program's root
 * (the caller checks the call's); a reduce's recvbuf is not touched off the root (it may be NULL there). op is
 * ignored by allgather, all-to-all and broadcast.
 * timeout: seconds each step may wait (<= 0: no deadline); status: {beat, step} words updated at every step, or
 * NULL; failure: room for 2 + N ints, on a deadline the step, the number of peers waited on and those peers.
 *
 * Returns 0 (done), 1 (refused before any message: err says why; refused on every rank of comm when a rank could
 * not set up its state or build its plan), 2 (a step passed its deadline: failure; the pending requests are
 * cancelled; step -1: the communicator's first call, its MPI_Comm_idup, or the ranks' agreement before the first
 * message of a call that builds a plan) or 3 (an MPI error: err holds MPI's message; no request is left in flight). */
DC_EXPORT int directcoll_run(void *program, int collective, int in_place, const void *sendbuf, void *recvbuf,
                             long long count, MPI_Fint datatype_f, MPI_Fint op_f, MPI_Fint comm_f, double timeout,
                             int64_t *status, int *failure, char *err, size_t errlen) {
    const dc_program *p = program;
    MPI_Comm comm = PMPI_Comm_f2c(comm_f);
    MPI_Datatype datatype = PMPI_Type_f2c(datatype_f);
    MPI_Op op = PMPI_Op_f2c(op_f);
    int inter = 0, size = 0, rank = 0;
    const char *why = NULL, *tname = NULL;
    dc_reduce_fn fn = NULL;
    err[0] = '\0';
    if (!p || collective < 0 || collective >= DC_NCOLLECTIVES || (uint32_t)collective != p->collective) {
        snprintf(err, errlen, "the program is %s %s, not a %s", p ? "a" : "not",
                 p ? dc_collective_name(p->collective) : "loaded",
                 collective >= 0 && collective < DC_NCOLLECTIVES ? dc_collective_name((uint32_t)collective)
                                                                 : "known collective");
        return RUN_REFUSED;
    }
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
        snprintf(err, errlen, "an intercommunicator or null communicator: give an intracommunicator");
        return RUN_REFUSED;
    }
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    if ((int)p->nranks != size) {
        snprintf(err, errlen, "the program is for %u ranks; the communicator has %d", p->nranks, size);
        return RUN_REFUSED;
    }
    if (count < 0) {
        snprintf(err, errlen, "a negative count (%lld)", count);
        return RUN_REFUSED;
    }
    const int rooted = collective == DC_BROADCAST || collective == DC_REDUCE_TO_ROOT, at_root = rank == (int)p->root;
    if (collective <= DC_REDUCE_SCATTER || collective == DC_REDUCE_TO_ROOT) {
        if (!(fn = dc_reduction(op, datatype, &why))) {
            snprintf(err, errlen, "the C engine does not reduce %s: %s", dc_op_name(op) ? dc_op_name(op) : "this op",
                     why ? why : "unsupported");
            return RUN_REFUSED;
        }
    } else if (!dc_known_type(datatype, &tname)) {
        snprintf(err, errlen, "the C engine does not copy a %s datatype", tname ? tname : "derived");
        return RUN_REFUSED;
    }
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_get_extent(datatype, &lb, &extent);
    if (collective == DC_REDUCE_TO_ROOT && in_place && !at_root) {
        snprintf(err, errlen, "a reduce in place on rank %d, not the root %u (MPI_IN_PLACE is the root's)", rank,
                 p->root);
        return RUN_REFUSED;
    }
    const int64_t total = collective == DC_ALLREDUCE || rooted ? (int64_t)count : (int64_t)count * size;
    const size_t block = (size_t)count * (size_t)extent;  /* bytes of one rank's block (not allreduce) */
    const int from_send = (collective == DC_ALLREDUCE || collective == DC_REDUCE_TO_ROOT) && !in_place;
    int late = 0;
    estate *s = state_of(comm, timeout, &late, err, errlen);
    if (!s && late) {  /* step -1: the setup; waiting on every other rank */
        failure[0] = -1;
        failure[1] = size - 1;
        for (int r = 0, k = 0; r < size; r++)
            if (r != rank) failure[2 + k++] = r;
        return RUN_DEADLINE;
    }
    if (!s) return RUN_REFUSED;
    run_ctx ctx = {NULL, timeout, (volatile int64_t *)status, failure, rank, size};
    dc_hooks hooks = {on_step, on_wait, on_abandon, &ctx};
    int rc = MPI_SUCCESS;
    dc_plan *plan = dc_cache_plan(&s->plans, s->comm, p, s->rank, total, datatype, extent, from_send, NULL, &hooks,
                                  &rc, err, errlen);
    if (!plan)  /* refused on every rank of comm; or the agreement (step -1) ran past the deadline or failed */
        return rc == MPI_SUCCESS ? RUN_REFUSED : rc == DC_DEADLINE ? RUN_DEADLINE : mpi_error(rc, err, errlen);
    ctx.plan = plan;
    char *buf = recvbuf;
    const void *from = NULL;
    switch (collective) {
    case DC_ALLREDUCE:
        from = from_send ? sendbuf : NULL;
        break;
    case DC_REDUCE_SCATTER:  /* the schedule works in a copy of sendbuf (in recvbuf itself in place) */
        buf = in_place ? recvbuf : plan->work;
        if (!in_place && total > 0) memcpy(buf, sendbuf, (size_t)total * (size_t)extent);
        break;
    case DC_ALLGATHER:  /* in recvbuf, this rank's block first copied in */
        if (!in_place && block > 0) memcpy((char *)recvbuf + (size_t)rank * block, sendbuf, block);
        break;
    case DC_BROADCAST:  /* in recvbuf on every rank; the root's input copied in first (ncclBroadcast's form) */
        if (!in_place && at_root && block > 0) memmove(recvbuf, sendbuf, block);
        break;
    case DC_REDUCE_TO_ROOT:  /* in recvbuf at the root, in the plan's work buffer elsewhere; reads sendbuf */
        buf = at_root ? recvbuf : plan->work;
        from = from_send ? sendbuf : NULL;
        break;
    default:  /* all-to-all: reads sendbuf (in place: a copy of recvbuf), writes recvbuf */
        from = sendbuf;
        if (in_place) {
            if (total > 0) memcpy(plan->work, recvbuf, (size_t)total * (size_t)extent);
            from = plan->work;
        }
    }
    rc = dc_execute(s->comm, plan, buf, from, fn, &hooks);
    if (rc == DC_DEADLINE) return RUN_DEADLINE;
    if (rc != MPI_SUCCESS) return mpi_error(rc, err, errlen);
    if (collective == DC_REDUCE_SCATTER && block > 0) memmove(recvbuf, buf + (size_t)rank * block, block);
    return RUN_OK;
}

/* For tests and measurements: the elements the plan of program for rank sends over the whole schedule on a vector of
 * total elements of datatype (allreduce, broadcast, reduce: the count; the others: N x the block), message by
 * message as it travels (a message carries each source element once). -1 with err set when the plan cannot be
 * built. No message is sent, but MPI must be initialized: plans build derived datatypes. */
DC_EXPORT long long directcoll_plan_sent(void *program, int rank, long long total, MPI_Fint datatype_f, char *err,
                                         size_t errlen) {
    const dc_program *p = program;
    MPI_Datatype datatype = PMPI_Type_f2c(datatype_f);
    MPI_Aint lb = 0, extent = 0;
    if (!p || rank < 0 || (uint32_t)rank >= p->nranks || total < 0) {
        snprintf(err, errlen, "no program, a rank outside it or a negative count");
        return -1;
    }
    PMPI_Type_get_extent(datatype, &lb, &extent);
    dc_plan *plan = dc_plan_build(p, rank, total, datatype, extent, 0, err, errlen);
    if (!plan) return -1;
    long long sent = 0;
    for (size_t t = 0; t < plan->nsteps; t++)
        for (size_t i = 0; i < plan->steps[t].nsend; i++) sent += plan->steps[t].send[i].len;
    dc_plan_free(plan);
    return sent;
}

/* The MPI library version string the library was built against, and whether the running MPI has the same (1). */
DC_EXPORT int directcoll_same_mpi(void) {
    char running[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int len = 0;
    PMPI_Get_library_version(running, &len);
    running[len < 0 ? 0 : len > MPI_MAX_LIBRARY_VERSION_STRING ? MPI_MAX_LIBRARY_VERSION_STRING : len] = '\0';
    return strcmp(running, DC_BUILT_MPI_VERSION) == 0;
}
