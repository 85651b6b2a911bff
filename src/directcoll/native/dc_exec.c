/* libdirectcoll: running a plan (docs/runtime.md, "Execution", "Failing safe"): per step, pack what is staged, move the
 * step's messages over MPI point-to-point or through the shared-memory channels (dc_shm.c), then apply copies and
 * then reductions (the IR's bulk-synchronous semantics). The interposed MPI_ calls (directcoll.c) and the C engine's
 * entry point (dc_entry.c) run their plans here.
 *
 * Failing safe: a plan holds everything a run needs (its buffers, its requests), so a run allocates nothing, and its
 * ranks agreed that each has its plan before the first message (dc_cache_plan). The only errors left are MPI's (with
 * an error handler that returns them) and a caller's deadline (dc_entry.c's wait hook): then every request still in
 * flight is cancelled and completed (or handed back to MPI with MPI_Request_free where it would not complete), and
 * the error is returned; no request of the run is left behind.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "dc_internal.h"

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

static int wait_for(const dc_hooks *hooks, size_t t, size_t n, MPI_Request *reqs, const int *peers) {
    if (n == 0) return MPI_SUCCESS;
    return hooks && hooks->wait ? hooks->wait(hooks->ctx, t, (int)n, reqs, peers)
                                : PMPI_Waitall((int)n, reqs, MPI_STATUSES_IGNORE);
}

/* After a failed run: every request still in flight cancelled and completed, so none is left behind (MPI 4.1 Sec.
 * 3.8.4: a wait for a cancelled request returns whatever its peer does); the hook's way instead when it has one (the
 * C engine cannot wait on a stopped peer). A request MPI still reports pending after the wait (MPI_ERR_PENDING) is
 * handed to MPI with MPI_Request_free. */
static void abandon(const dc_hooks *hooks, const dc_plan *plan) {
    const int n = (int)plan->nreqs;
    MPI_Request *reqs = plan->reqs;
    if (hooks && hooks->abandon) {
        hooks->abandon(hooks->ctx, n, reqs);
    } else {
        for (int i = 0; i < n; i++)
            if (reqs[i] != MPI_REQUEST_NULL) PMPI_Cancel(&reqs[i]);
        PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    }
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) PMPI_Request_free(&reqs[i]);
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

/* A pipelined step's reduced receives: their segments in message order, DC_WINDOW in flight (requests win, their
 * peers wpeers), each received into a window slot and reduced into place as soon as it arrives (while it is in cache
 * and the next ones travel). */
static int reduce_pipelined(const dc_plan *plan, const dc_step *st, size_t t, char *const base[3], int tag,
                            MPI_Comm comm, dc_reduce_fn fn, const dc_hooks *hooks, MPI_Request *win, int *wpeers) {
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
            wpeers[next % DC_WINDOW] = 2 * m->peer;
            rc = post(m, g, 0, base, NULL, slots + (int64_t)(next % DC_WINDOW) * slot * x, plan->datatype, x, tag,
                      comm, &win[next % DC_WINDOW]);
        }
        if (rc == MPI_SUCCESS) rc = wait_for(hooks, t, 1, &win[k % DC_WINDOW], &wpeers[k % DC_WINDOW]);
        if (rc != MPI_SUCCESS) return rc;
        const dc_msg *m = next_reduced(st, &dmsg, &dseg, &g);
        const int64_t first = (int64_t)g * m->seglen;
        scatter(slots + (int64_t)(k % DC_WINDOW) * slot * x, m->dst, m->ndst, first,
                m->len - first < m->seglen ? m->len - first : m->seglen, base, x, DC_REDUCE, fn);
    }
    return rc;
}

/* Step t's messages over MPI point-to-point: post the receives and the sends (every message in its segments) after
 * the *pending requests of earlier steps' sends, then wait; a pipelined step reduces its received segments as they
 * arrive. A step whose sends may complete later (defer) waits for its receives only and leaves its sends pending
 * (*pending grows); any other waits for every request in flight (*pending becomes 0). */
static int mpi_step(MPI_Comm comm, const dc_plan *plan, const dc_step *st, size_t t, char *const base[3],
                    dc_reduce_fn fn, const dc_hooks *hooks, size_t *pending) {
    const MPI_Aint x = plan->extent;
    MPI_Request *reqs = plan->reqs;
    int *peers = plan->peers, rc = MPI_SUCCESS, tag = (int)(t & 0x7fff);
    const size_t first = *pending;  /* the step's receives start here, its sends at `sends` */
    size_t k = first;
    for (size_t i = 0; i < st->nrecv && rc == MPI_SUCCESS; i++) {
        if (st->pipelined && st->recv[i].op == DC_REDUCE) continue;
        for (int g = 0; g < st->recv[i].nseg && rc == MPI_SUCCESS; g++, k++) {
            peers[k] = 2 * st->recv[i].peer;
            rc = post(&st->recv[i], g, 0, base, plan->stage, NULL, plan->datatype, x, tag, comm, &reqs[k]);
        }
    }
    const size_t sends = k;
    for (size_t i = 0; i < st->nsend && rc == MPI_SUCCESS; i++) {
        for (int g = 0; g < st->send[i].nseg && rc == MPI_SUCCESS; g++, k++) {
            peers[k] = 2 * st->send[i].peer + 1;
            rc = post(&st->send[i], g, 1, base, plan->stage, NULL, plan->datatype, x, tag, comm, &reqs[k]);
        }
    }
    if (rc != MPI_SUCCESS) return rc;
    from_sendbuf(st->init, st->ninit, base, x);  /* cells no copy or reduction of the step writes first */
    if (st->pipelined) rc = reduce_pipelined(plan, st, t, base, tag, comm, fn, hooks, reqs + k, peers + k);
    if (rc != MPI_SUCCESS) return rc;
    if (!st->defer) {
        rc = wait_for(hooks, t, k, reqs, peers);
        *pending = 0;
        return rc;
    }
    if ((rc = wait_for(hooks, t, sends - first, reqs + first, peers + first)) != MPI_SUCCESS) return rc;
    memmove(reqs + first, reqs + sends, (k - sends) * sizeof *reqs);  /* the sends stay in flight, in order */
    memmove(peers + first, peers + sends, (k - sends) * sizeof *peers);
    for (size_t i = first + (k - sends); i < k; i++) reqs[i] = MPI_REQUEST_NULL;
    *pending = first + (k - sends);
    return MPI_SUCCESS;
}

/* Run a plan on buf (the user's vector, count elements; with from_send, recvbuf, and sendbuf holds the input):
 * per step, pack what is staged, move the step's messages, then apply copies and then reductions (the IR's
 * bulk-synchronous semantics). Messages move over MPI point-to-point (mpi_step) or, for a plan attached to a
 * communicator's shared-memory channels, through them (dc_shm_step; the C engine's plans never are, so its hooks
 * keep their waits). Reductions a step applies as they arrive (a pipelined step; over shared memory, every step
 * whose reduced cells are neither sent in place nor copied into) come before the copies: no cell is both
 * (dc_plan_build, dc_shm_attach). Over MPI, sends a step leaves in flight (dc_step.defer) complete before the next
 * step that writes anything, and before the call returns. hooks (NULL: none) see every step and replace
 * PMPI_Waitall (dc_entry.c). On an error nothing is left in flight (abandon). */
int dc_execute(MPI_Comm comm, const dc_plan *plan, char *buf, const void *sendbuf, dc_reduce_fn fn,
               const dc_hooks *hooks) {
    char *const base[3] = {buf, plan->scratch, (char *)(uintptr_t)sendbuf};  /* region 2 is only read */
    const MPI_Aint x = plan->extent;
    size_t pending = 0;  /* plan->reqs[0, pending): sends of earlier steps still in flight */
    int rc = MPI_SUCCESS;
    for (size_t t = 0; t < plan->nsteps && rc == MPI_SUCCESS; t++) {
        const dc_step *st = &plan->steps[t];
        if (pending && st->writes) {
            if ((rc = wait_for(hooks, t, pending, plan->reqs, plan->peers)) != MPI_SUCCESS) break;
            pending = 0;
        }
        for (size_t i = 0; i < st->nsend; i++)
            if (!st->send[i].direct) gather(plan->stage + st->send[i].stage * x, st->send[i].src, st->send[i].nsrc,
                                            base, x);
        for (size_t i = 0; i < st->nlocal; i++)
            gather(plan->stage + st->local[i].stage * x, st->local[i].src, st->local[i].nsrc, base, x);
        if (hooks && hooks->step) hooks->step(hooks->ctx, t);
        if (plan->shm) {
            from_sendbuf(st->init, st->ninit, base, x);  /* cells no copy or reduction of the step writes first */
            rc = dc_shm_step(plan->shm, plan, st, base, fn);
        } else {
            rc = mpi_step(comm, plan, st, t, base, fn, hooks, &pending);
        }
        if (rc != MPI_SUCCESS) break;
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
    if (rc == MPI_SUCCESS && pending)
        rc = wait_for(hooks, plan->nsteps - 1, pending, plan->reqs, plan->peers);
    if (rc != MPI_SUCCESS) {
        abandon(hooks, plan);
        return rc;
    }
    from_sendbuf(plan->final, plan->nfinal, base, x);
    return MPI_SUCCESS;
}

