/* libdirectcoll: the plans of a communicator, cached, and the ranks' agreement to run them (docs/runtime.md,
 * "Execution", "Failing safe"). One cache serves both callers: the interposed MPI_ calls (directcoll.c) and the C
 * engine's entry point (dc_entry.c), each keeping one per communicator in its state.
 *
 * A plan is a program rounded for one call's count and datatype (dc_plan_build); it is kept, most recently used
 * first, keyed by the program's checksum, the count, the datatype and whether the call is in place. Building it is
 * the only thing a call does that can fail on one rank alone (memory), so before the first message of a call that
 * builds one, the ranks agree with one small reduction on the communicator that every rank built its plan (and on
 * the transport its channels allow): if any could not, no rank keeps its plan and all fall through together. A call
 * that finds its plan sends nothing more.
 *
 * That needs every rank to find or miss its plans in the same calls. The key is the same on every rank for the
 * calls MPI lets ranks make (a count, datatype and in-place choice every rank shares), with one exception: a
 * reduce's root may be in place while the other ranks are not, and may switch between calls. So the key of a reduce
 * leaves in-place out, and its root builds both of its plans at once. With the same keys in the same order, the
 * caches (same length) keep and drop the same plans on every rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dc_internal.h"

struct dc_cached {
    dc_cached *next;
    uint64_t checksum;        /* of the program: plans outlive the handles they were built from (dc_entry.c) */
    uint32_t collective;
    int64_t count;
    MPI_Datatype datatype;
    int from_send;            /* -1 for a reduce (plan[from_send] on this rank) */
    dc_plan *plan[2];         /* by from_send */
};

static void free_cached(dc_cached *q) {
    dc_plan_free(q->plan[0]);
    dc_plan_free(q->plan[1]);
    free(q);
}

void dc_cache_clear(dc_cache *c) {
    while (c->head) {
        dc_cached *next = c->head->next;
        free_cached(c->head);
        c->head = next;
    }
    c->n = 0;
}

/* One small reduction on comm: the lowest rank that could not build its plan (size when all could), and whether
 * every rank's plan runs over the channels. With a wait hook, non-blocking and waited for with its deadline. */
static int agree(dc_cache *c, MPI_Comm comm, int built, int rank, int size, int over_shm, const dc_hooks *hooks) {
    c->mine[0] = built ? size : rank;
    c->mine[1] = over_shm;
    if (!(hooks && hooks->wait)) return PMPI_Allreduce(c->mine, c->all, 2, MPI_INT, MPI_MIN, comm);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = PMPI_Iallreduce(c->mine, c->all, 2, MPI_INT, MPI_MIN, comm, &req);
    if (rc == MPI_SUCCESS) rc = hooks->wait(hooks->ctx, DC_SETUP_STEP, 1, &req, NULL);
    if (rc != MPI_SUCCESS) c->broken = 1;  /* a collective request cannot be cancelled: MPI may still write c->all */
    return rc;
}

dc_plan *dc_cache_plan(dc_cache *c, MPI_Comm comm, const dc_program *p, int rank, int64_t count,
                       MPI_Datatype datatype, MPI_Aint extent, int from_send, dc_shm *shm, const dc_hooks *hooks,
                       int *rc, char *why, size_t len) {
    *rc = MPI_SUCCESS;
    if (c->broken) {
        snprintf(why, len, "an earlier agreement of the ranks on this communicator did not complete in time");
        return NULL;
    }
    const int reduce = p->collective == DC_REDUCE_TO_ROOT, key = reduce ? -1 : from_send;
    dc_cached **link = &c->head;
    for (dc_cached *q = c->head; q; link = &q->next, q = q->next) {
        if (q->checksum == p->checksum && q->collective == p->collective && q->count == count &&
            q->datatype == datatype && q->from_send == key) {
            *link = q->next;  /* most recently used first */
            q->next = c->head;
            c->head = q;
            if (!q->plan[from_send])  /* a reduce in place off its root: the callers refuse it before */
                snprintf(why, len, "no plan for a reduce %sin place on this rank", from_send ? "not " : "");
            return q->plan[from_send];
        }
    }
    /* a miss, on every rank: build (both plans at a reduce's root), then agree */
    int size = 0;
    PMPI_Comm_size(comm, &size);
    char err[300] = "out of memory";
    dc_cached *q = dc_calloc(1, sizeof *q);
    int built = q != NULL, over_shm = shm != NULL;
    const char *shm_why = NULL;
    for (int fs = 0; fs < 2 && built; fs++) {
        if (fs != from_send && !(reduce && rank == (int)p->root)) continue;
        built = (q->plan[fs] = dc_plan_build(p, rank, count, datatype, extent, fs, err, sizeof err)) != NULL;
        if (built && shm) {
            const char *no = dc_shm_attach(shm, q->plan[fs], rank);
            if (no) over_shm = 0, shm_why = no;
        }
    }
    if ((*rc = agree(c, comm, built, rank, size, over_shm, hooks)) != MPI_SUCCESS) {
        if (q) free_cached(q);
        snprintf(why, len, "the ranks could not agree to run the program");
        return NULL;
    }
    if (c->all[0] < size) {  /* some rank could not build its plan: every rank falls through */
        if (q) free_cached(q);
        if (c->all[0] == rank) snprintf(why, len, "this rank could not build its plan: %s", err);
        else snprintf(why, len, "rank %d could not build its plan (no rank runs the program)", c->all[0]);
        return NULL;
    }
    for (int fs = 0; fs < 2; fs++) {  /* one transport for every rank: MPI unless every plan can use the channels */
        if (q->plan[fs] && q->plan[fs]->shm && !c->all[1]) {
            q->plan[fs]->shm = NULL;
            q->plan[fs]->shm_why = shm_why ? shm_why : "another rank's plan cannot use the channels";
        } else if (q->plan[fs] && !q->plan[fs]->shm && shm_why) {
            q->plan[fs]->shm_why = shm_why;
        }
    }
    *q = (dc_cached){c->head, p->checksum, p->collective, count, datatype, key, {q->plan[0], q->plan[1]}};
    c->head = q;
    if (++c->n > c->max && c->max > 0) {  /* drop the least recently used */
        dc_cached *last = c->head;
        while (last->next && last->next->next) last = last->next;
        free_cached(last->next);
        last->next = NULL;
        c->n--;
    }
    return q->plan[from_send];
}
