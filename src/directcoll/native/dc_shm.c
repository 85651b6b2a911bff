/* libdirectcoll's shared-memory transport (docs/runtime.md, "The shared-memory transport"): when every rank of a
 * communicator is on one node, a plan's messages travel through one shared segment (MPI_Win_allocate_shared) instead
 * of MPI point-to-point, under the same plans and steps as dc_execute's MPI transport.
 *
 * The segment holds one single-producer / single-consumer FIFO channel per directed pair of ranks, in the receiver's
 * part of the window: K cells of C bytes (cache-sized) and a counter on cache lines of its own, `tail` (cells
 * consumed; only the receiver writes it). Each cell starts with its sequence word (only the sender writes it): cell
 * i of the stream, in slot i mod K, is full when its word reads i + 1. C11 atomics, stored with release and loaded
 * with acquire ordering, so a cell's bytes are visible before the word that publishes it. The word shares its cache
 * line with the cell's first 48 bytes, so a small message costs the receiver one cache-line transfer (a separate
 * `head` counter cost two: the counter's line, then the cell's). The sender reads `tail` only when the channel looks
 * full. A message starts at a new cell and fills floor(C / extent) elements per cell; both ends know its length.
 *
 * Why it is faster than point-to-point on one node (docs/benchmarks.md, "Native runtime"): MPICH moves messages of
 * 8 KiB and more by CMA (process_vm_readv, pinning the pages) and small ones through message matching and requests;
 * here a send packs its runs straight into a cell (that is the packing: no derived datatype) and a receive drains
 * the cell straight into its destination runs, reducing from the cell while it is in cache where the step lets it.
 *
 * Ordering: the messages of one directed pair travel in program order through their channel, which both ends share
 * (the program lists a step's transfers in one order for sender and receiver), across steps and calls alike.
 * Deadlock-free: a step's loop pushes whatever cells are free and drains whatever cells are full over all of its
 * messages until all are done, and a send is done once its last cell is written (the cells hold the data).
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dc_internal.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the channel counters must be lock-free to be shared between processes");

#define LINE 128               /* a counter's own region: two cache lines (the adjacent-line prefetcher pairs them) */
#define CELL_ALIGN 64          /* cells start on cache lines */
#define CELL_DATA 16           /* a cell's bytes start after its sequence word, 16-byte aligned (every datatype's) */
#define SPIN_POLLS 256         /* empty polls before the loop drives MPI's progress and yields the core on every
                                  further empty poll */

typedef struct {               /* the head of a channel, in shared memory; K cells follow, each a sequence word (an
                                  atomic_ullong) and CELL_DATA - 8 bytes of padding before its C bytes */
    _Alignas(LINE) atomic_ullong tail;
} dc_chan;

typedef struct {               /* one message's progress in a step */
    int64_t done;              /* elements moved */
    size_t run;                /* the run the next element is in, and how far into it */
    int64_t within;
} dc_progress;

struct dc_shm {
    MPI_Comm comm;                           /* the private duplicate the window belongs to */
    MPI_Win win;
    int rank, size, cells;
    size_t cell_bytes, stride, chan_bytes;   /* a cell's capacity, the distance between cells, one channel's bytes */
    dc_chan **out, **in;                     /* per peer: the channel to it and the one from it (NULL: self) */
    unsigned long long *sent, *taken;        /* per peer: cells written into out[p], cells consumed from in[p] */
    unsigned long long *tail_seen;           /* per peer: out[p]'s tail as last loaded */
    unsigned *busy;                          /* per peer and direction: the pass in which a message held it */
    unsigned pass;
    dc_progress *prog;                       /* room for a step's messages */
    size_t nprog;
};

/* the sequence word of stream cell i of channel c; its bytes start CELL_DATA after it */
static atomic_ullong *cell_of(dc_chan *c, const dc_shm *sh, unsigned long long i) {
    return (atomic_ullong *)((char *)c + sizeof(dc_chan) + (size_t)(i % (unsigned)sh->cells) * sh->stride);
}

/* the first address at or after p on a LINE boundary: the same place of the segment in every process, since each
 * maps the segment page-aligned */
#ifndef DC_NO_SHM
static char *on_line(char *p) { return p + (LINE - (size_t)((uintptr_t)p % LINE)) % LINE; }
#endif

dc_shm *dc_shm_open(MPI_Comm comm, int want, size_t cell_bytes, int cells, size_t budget, char *why, size_t len) {
#ifdef DC_NO_SHM
    (void)comm, (void)want, (void)cell_bytes, (void)cells, (void)budget;
    snprintf(why, len, "this build has no shared-memory transport");
    return NULL;
#else
    int size = 0, rank = 0, nodesize = 0;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    /* collective on every rank, whatever its own wish: the ranks agree on one transport */
    MPI_Comm node = MPI_COMM_NULL;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        PMPI_Comm_size(node, &nodesize);
        PMPI_Comm_free(&node);
    }
    const size_t stride = (CELL_DATA + cell_bytes + CELL_ALIGN - 1) / CELL_ALIGN * CELL_ALIGN;
    const size_t chan = (sizeof(dc_chan) + (size_t)cells * stride + LINE - 1) / LINE * LINE;  /* dc_chan's alignment */
    const double total = (double)size * (size - 1) * (double)chan;  /* the node's segment: N (N - 1) channels */
    int ok = want != DC_TRANSPORT_MPI && nodesize == size && total <= (double)budget ? 1 : 0;
    long long mine[5] = {ok, (long long)cell_bytes, cells, -(long long)cell_bytes, -(long long)cells}, all[5];
    if (PMPI_Allreduce(mine, all, 5, MPI_LONG_LONG, MPI_MIN, comm) != MPI_SUCCESS) {
        snprintf(why, len, "cannot agree on a transport");
        return NULL;
    }
    if (want == DC_TRANSPORT_MPI) {
        snprintf(why, len, "DIRECTCOLL_TRANSPORT=mpi");
        return NULL;
    }
    if (nodesize != size) {
        snprintf(why, len, "the %d ranks are not all on one node", size);
        return NULL;
    }
    if (total > (double)budget) {
        snprintf(why, len, "its channels would take %.0f MiB, over the %.0f MiB budget", total / 1048576.0,
                 (double)budget / 1048576.0);
        return NULL;
    }
    if (all[0] != 1 || all[1] != -all[3] || all[2] != -all[4]) {
        snprintf(why, len, "the ranks differ on DIRECTCOLL_TRANSPORT or the cell geometry");
        return NULL;
    }
    dc_shm *sh = dc_calloc(1, sizeof *sh);
    const size_t n = (size_t)size;
    if (!sh || !(sh->out = dc_calloc(n, sizeof *sh->out)) || !(sh->in = dc_calloc(n, sizeof *sh->in)) ||
        !(sh->sent = dc_calloc(n, sizeof *sh->sent)) || !(sh->taken = dc_calloc(n, sizeof *sh->taken)) ||
        !(sh->tail_seen = dc_calloc(n, sizeof *sh->tail_seen)) ||
        !(sh->busy = dc_calloc(2 * n, sizeof *sh->busy))) {
        snprintf(why, len, "out of memory");
        ok = 0;
    }
    int agreed = 0;  /* every rank allocated its bookkeeping: the window is collective */
    PMPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, comm);
    if (!agreed) {
        if (ok) snprintf(why, len, "out of memory on another rank");
        if (sh) {
            free(sh->out), free(sh->in), free(sh->sent), free(sh->taken), free(sh->tail_seen);
            free(sh->busy);
            free(sh);
        }
        return NULL;
    }
    sh->comm = comm;
    sh->rank = rank;
    sh->size = size;
    sh->cells = cells;
    sh->cell_bytes = cell_bytes;
    sh->stride = stride;
    sh->chan_bytes = chan;
    sh->win = MPI_WIN_NULL;
    /* rank r's part: the channels into r, from every other rank in rank order (the receiver's memory) */
    MPI_Info info = MPI_INFO_NULL;
    PMPI_Info_create(&info);
    PMPI_Info_set(info, "alloc_shared_noncontig", "true");  /* each part on pages of its own */
    char *part = NULL;  /* LINE bytes more: a part need not start on a cache line (Open MPI's start 8 bytes into one) */
    int rc = PMPI_Win_allocate_shared((MPI_Aint)((n - 1) * chan + LINE), 1, info, comm, &part, &sh->win);
    PMPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        snprintf(why, len, "MPI_Win_allocate_shared failed");
        dc_shm_close(sh);
        return NULL;
    }
    for (int r = 0; r < size; r++) {
        if (r == rank) continue;
        MPI_Aint bytes = 0;
        int unit = 0;
        char *theirs = NULL;
        PMPI_Win_shared_query(sh->win, r, &bytes, &unit, &theirs);
        sh->out[r] = (dc_chan *)(on_line(theirs) + (size_t)(rank < r ? rank : rank - 1) * chan);  /* in r's part */
        sh->in[r] = (dc_chan *)(on_line(part) + (size_t)(r < rank ? r : r - 1) * chan);
        atomic_init(&sh->in[r]->tail, 0);
        for (int k = 0; k < cells; k++) atomic_init(cell_of(sh->in[r], sh, (unsigned long long)k), 0);
    }
    /* a passive-target epoch for the window's lifetime (MPI 4.1 Sec. 12.5.4: load/store access to a shared window);
     * the barrier orders every rank's zeroed counters before the first cell */
    PMPI_Win_lock_all(MPI_MODE_NOCHECK, sh->win);
    PMPI_Win_sync(sh->win);
    PMPI_Barrier(comm);
    PMPI_Win_sync(sh->win);
    return sh;
#endif
}

void dc_shm_close(dc_shm *sh) {
    if (!sh) return;
#ifndef DC_NO_SHM
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (sh->win != MPI_WIN_NULL && !finalized) {  /* collective: every rank deletes the attribute together */
        PMPI_Win_unlock_all(sh->win);
        PMPI_Win_free(&sh->win);
    }
#endif
    free(sh->out), free(sh->in), free(sh->sent), free(sh->taken), free(sh->tail_seen);
    free(sh->busy);
    free(sh->prog);
    free(sh);
}

/* ---- deciding where a step's reductions land -------------------------------------------------------------------- */
typedef struct {
    int region, kind;          /* kind: 0 read in place or copied into, 1 reduced into */
    int64_t lo, hi;
} span;

static int by_start(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->region != y->region) return x->region < y->region ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void add_runs(span *v, size_t *n, const dc_seg *runs, size_t nruns, int kind) {
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].len > 0) v[(*n)++] = (span){runs[i].region, kind, runs[i].off, runs[i].off + runs[i].len};
}

/* Whether the step's reduced receives can be reduced straight from the cells into place while the step runs (none
 * of their cells is sent in place or copied into in the step: the sends read the state before the step, copies land
 * before reductions) and whether two of them reduce into the same cell (then they are applied in message order, so
 * the result and the first reduction's three operands are those of the MPI transport). */
static int plan_step(dc_step *st) {
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < st->nsend; i++) cap += st->send[i].direct ? st->send[i].nsrc : 0;
    for (size_t i = 0; i < st->nrecv; i++) cap += st->recv[i].ndst;
    for (size_t i = 0; i < st->nlocal; i++) cap += st->local[i].op == DC_COPY ? st->local[i].ndst : 0;
    span *v = dc_malloc((cap ? cap : 1) * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < st->nsend; i++)
        if (st->send[i].direct) add_runs(v, &n, st->send[i].src, st->send[i].nsrc, 0);
    for (size_t i = 0; i < st->nrecv; i++) add_runs(v, &n, st->recv[i].dst, st->recv[i].ndst, st->recv[i].op);
    for (size_t i = 0; i < st->nlocal; i++)
        if (st->local[i].op == DC_COPY) add_runs(v, &n, st->local[i].dst, st->local[i].ndst, 0);
    qsort(v, n, sizeof *v, by_start);
    int clash = 0, overlap = 0;
    int64_t reach[2] = {0, 0};  /* the furthest end so far, per kind, in the current region */
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || v[i].region != v[i - 1].region) reach[0] = reach[1] = INT64_MIN;
        if (v[i].kind == 1) {
            clash |= v[i].lo < reach[0];
            overlap |= v[i].lo < reach[1];
        } else {
            clash |= v[i].lo < reach[1];
        }
        if (v[i].hi > reach[v[i].kind]) reach[v[i].kind] = v[i].hi;
    }
    free(v);
    int sliced = 0;  /* a receive of overlapping pieces is staged and applied slice by slice after the step */
    for (size_t i = 0; i < st->nrecv; i++) sliced |= st->recv[i].nslice > 0;
    st->shm_reduce = !sliced && (st->pipelined || !clash);  /* a pipelined step is one the plan checked already */
    st->shm_ordered = overlap;
    return 0;
}

const char *dc_shm_attach(dc_shm *sh, dc_plan *plan, int rank) {
    if ((size_t)plan->extent > sh->cell_bytes) return "a datatype wider than a cell";
    size_t most = 0;  /* messages in a step */
    for (size_t t = 0; t < plan->nsteps; t++) {
        const dc_step *st = &plan->steps[t];
        most = st->nsend + st->nrecv > most ? st->nsend + st->nrecv : most;
        for (size_t i = 0; i < st->nsend + st->nrecv; i++) {
            const dc_msg *m = i < st->nsend ? &st->send[i] : &st->recv[i - st->nsend];
            if (m->peer == rank || m->peer < 0 || m->peer >= sh->size) return "a message to its own rank";
        }
    }
    if (most > sh->nprog) {  /* a step's progress records, made here: a run allocates nothing */
        dc_progress *v = dc_realloc(sh->prog, most * sizeof *v);
        if (!v) return "out of memory";
        sh->prog = v;
        sh->nprog = most;
    }
    for (size_t t = 0; t < plan->nsteps; t++)
        if (plan_step(&plan->steps[t]) != 0) return "out of memory";
    plan->shm = sh;
    return NULL;
}

/* ---- one step --------------------------------------------------------------------------------------------------- */
enum { PACK, COPY_OUT, REDUCE_OUT };

/* Move n elements between the runs (from the message's cursor on) and the cell: pack them into it, or copy or
 * reduce them out of it (op= where recvbuf holds the cell; sendbuf (op) cell on a run marked init). */
static void walk(dc_progress *g, const dc_seg *runs, char *const base[3], MPI_Aint x, char *cell, int64_t n,
                 int mode, dc_reduce_fn fn) {
    while (n > 0) {
        const dc_seg *r = &runs[g->run];
        const int64_t k = r->len - g->within < n ? r->len - g->within : n, at = r->off + g->within;
        char *p = base[r->region] + at * x;
        if (k > 0) {
            if (mode == PACK) memcpy(cell, p, (size_t)(k * x));
            else if (mode == COPY_OUT) memcpy(p, cell, (size_t)(k * x));
            else fn(p, r->init ? base[2] + at * x : p, cell, (size_t)k);
        }
        cell += k * x;
        n -= k;
        if ((g->within += k) == r->len) {
            g->run++;
            g->within = 0;
        }
    }
}

/* Write the free cells of the channel to m's peer with its next elements; returns the cells written. */
static int push(dc_shm *sh, const dc_plan *plan, const dc_msg *m, dc_progress *g, char *const base[3]) {
    const MPI_Aint x = plan->extent;
    const int64_t per = (int64_t)(sh->cell_bytes / (size_t)x);
    const int p = m->peer;
    dc_chan *c = sh->out[p];
    int moved = 0;
    while (g->done < m->len) {
        const unsigned long long head = sh->sent[p];
        if (head - sh->tail_seen[p] >= (unsigned long long)sh->cells) {
            sh->tail_seen[p] = atomic_load_explicit(&c->tail, memory_order_acquire);
            if (head - sh->tail_seen[p] >= (unsigned long long)sh->cells) break;  /* full */
        }
        atomic_ullong *seq = cell_of(c, sh, head);
        char *cell = (char *)seq + CELL_DATA;
        const int64_t n = m->len - g->done < per ? m->len - g->done : per;
        if (m->direct) walk(g, m->src, base, x, cell, n, PACK, NULL);
        else memcpy(cell, plan->stage + (m->stage + g->done) * x, (size_t)(n * x));
        g->done += n;
        sh->sent[p] = head + 1;
        atomic_store_explicit(seq, head + 1, memory_order_release);  /* publishes the cell */
        moved++;
    }
    return moved;
}

/* Drain the full cells of the channel from m's peer into m's place: its runs (a direct copy; a reduction the step
 * applies in place) or the staging buffer (applied after the step); returns the cells drained. */
static int drain(dc_shm *sh, const dc_plan *plan, const dc_step *st, const dc_msg *m, dc_progress *g,
                 char *const base[3], dc_reduce_fn fn) {
    const MPI_Aint x = plan->extent;
    const int64_t per = (int64_t)(sh->cell_bytes / (size_t)x);
    const int p = m->peer;
    const int mode = m->op == DC_REDUCE ? (st->shm_reduce ? REDUCE_OUT : -1) : m->direct ? COPY_OUT : -1;
    dc_chan *c = sh->in[p];
    int moved = 0;
    while (g->done < m->len) {
        const unsigned long long tail = sh->taken[p];
        atomic_ullong *seq = cell_of(c, sh, tail);
        if (atomic_load_explicit(seq, memory_order_acquire) != tail + 1) break;  /* empty */
        const char *cell = (const char *)seq + CELL_DATA;
        const int64_t n = m->len - g->done < per ? m->len - g->done : per;
        if (mode < 0) memcpy(plan->stage + (m->stage + g->done) * x, cell, (size_t)(n * x));
        else walk(g, m->dst, base, x, (char *)(uintptr_t)cell, n, mode, fn);
        g->done += n;
        sh->taken[p] = tail + 1;
        atomic_store_explicit(&c->tail, tail + 1, memory_order_release);
        moved++;
    }
    return moved;
}

int dc_shm_step(dc_shm *sh, const dc_plan *plan, const dc_step *st, char *const base[3], dc_reduce_fn fn) {
    const size_t n = st->nsend + st->nrecv;  /* at most sh->nprog (dc_shm_attach) */
    if (n == 0) return MPI_SUCCESS;
    memset(sh->prog, 0, n * sizeof *sh->prog);
    size_t left = 0;
    for (size_t i = 0; i < n; i++) left += (i < st->nsend ? st->send[i].len : st->recv[i - st->nsend].len) > 0;
    for (unsigned idle = 0; left > 0;) {
        int moved = 0;
        if (++sh->pass == 0) {  /* the pass stamps wrapped: forget the old ones */
            memset(sh->busy, 0, 2 * (size_t)sh->size * sizeof *sh->busy);
            sh->pass = 1;
        }
        /* a message moves once those before it to or from the same peer are done (the channel's order); with
         * overlapping reductions, a reduced receive once those before it are done */
        int reducing = 0;
        for (size_t i = 0; i < n; i++) {
            const int sending = i < st->nsend;
            const dc_msg *m = sending ? &st->send[i] : &st->recv[i - st->nsend];
            dc_progress *g = &sh->prog[i];
            if (g->done == m->len) continue;
            unsigned *busy = &sh->busy[2 * (size_t)m->peer + (size_t)sending];
            const int ordered = !sending && m->op == DC_REDUCE && st->shm_reduce && st->shm_ordered;
            if (*busy != sh->pass && !(ordered && reducing)) {
                moved += sending ? push(sh, plan, m, g, base) : drain(sh, plan, st, m, g, base, fn);
                if (g->done == m->len) left--;
            }
            if (g->done < m->len) {
                *busy = sh->pass;
                reducing |= ordered;
            }
        }
        if (moved) {
            idle = 0;
        } else if (++idle >= SPIN_POLLS) {
            /* MPI's progress: a peer may wait in a point-to-point call of the application's on a message of ours
             * that only our progress engine moves (MPICH progresses weakly, inside MPI calls); and oversubscribed
             * ranks must let the others run */
            int flag = 0;
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, sh->comm, &flag, MPI_STATUS_IGNORE);
            sched_yield();
        }
    }
    return MPI_SUCCESS;
}
