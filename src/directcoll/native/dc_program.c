/* libdirectcoll: program files (docs/runtime.md, "Program files") and plans (a program for one count and datatype).
 *
 * A program file is count-independent: piece ends are block coordinates (numerators over the denominator). A plan
 * rounds them to element offsets for one count exactly as directcoll.runtime.program.boundaries / _elements do
 * (dc_coord.c), so pieces that share an end share it in elements and tile every block for any count, 0 included.
 * A plan allocates everything a run needs (dc_alloc.c's functions: a call's ranks agree that each built its plan
 * before the first message, dc_cache_plan), so running it allocates nothing.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dc_internal.h"

/* ---- reading little-endian fields with bounds checks ----------------------------------------------------------- */
typedef struct {
    const unsigned char *p, *end;
    int ok;
} cursor;

static uint64_t rd(cursor *c, int n) {
    if (!c->ok || c->end - c->p < n) {
        c->ok = 0;
        return 0;
    }
    uint64_t v = dc_le(c->p, n);
    c->p += n;
    return v;
}
static uint32_t rd32(cursor *c) { return (uint32_t)rd(c, 4); }
static int64_t rd64(cursor *c) { return (int64_t)rd(c, 8); }

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#define FAIL(...)                                        \
    do {                                                 \
        snprintf(err, errlen, __VA_ARGS__);              \
        goto fail;                                       \
    } while (0)

/* Check one rank's section: it parses to its end, peers and ops are valid, coordinates lie in the work buffer. */
static int check_rank(const dc_program *p, uint32_t r, char *err, size_t errlen) {
    cursor c = {p->data + dc_le(p->rank_offsets + 8 * r, 8), p->data + dc_le(p->rank_offsets + 8 * (r + 1), 8), 1};
    const int64_t top = (int64_t)(p->nblocks + p->nscratch) * p->denominator;
    for (uint32_t t = 0; t < p->nsteps; t++) {
        uint32_t n[3] = {rd32(&c), rd32(&c), rd32(&c)};
        for (int kind = 0; kind < 3; kind++) {
            for (uint32_t m = 0; m < n[kind] && c.ok; m++) {
                uint32_t peer = kind < 2 ? rd32(&c) : r;
                uint32_t op = kind > 0 ? rd32(&c) : 0;
                uint32_t np = rd32(&c);
                if (!c.ok || peer >= p->nranks || (kind < 2 && peer == r) || op > 1 ||
                    (uint64_t)(c.end - c.p) / (kind ? 24u : 16u) < np)
                    FAIL("rank %u, step %u: a bad message (peer %u, op %u, %u pieces)", r, t, peer, op, np);
                for (uint32_t i = 0; i < np; i++) {
                    int64_t a = rd64(&c), b = rd64(&c), d = kind ? rd64(&c) : a;
                    if (a < 0 || b < a || b > top || d < 0 || d > top - (b - a))
                        FAIL("rank %u, step %u: a piece [%lld, %lld) -> %lld outside the work buffer", r, t,
                             (long long)a, (long long)b, (long long)d);
                }
            }
        }
        if (!c.ok) FAIL("rank %u: its section ends in step %u", r, t);
    }
    if (c.p != c.end) FAIL("rank %u: %lld bytes left over after its steps", r, (long long)(c.end - c.p));
    return 0;
fail:
    return -1;
}

dc_program *dc_program_load(const char *path, char *err, size_t errlen) {
    dc_program *p = calloc(1, sizeof *p);
    FILE *f = fopen(path, "rb");
    if (!p || !f) FAIL("cannot open the program %s", path);
    if (fseek(f, 0, SEEK_END) != 0) FAIL("cannot read the program %s", path);
    long size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) FAIL("cannot read the program %s", path);
    p->size = (size_t)size;
    p->data = malloc(p->size ? p->size : 1);
    if (!p->data || fread(p->data, 1, p->size, f) != p->size) FAIL("cannot read the program %s", path);
    fclose(f);
    f = NULL;
    if (p->size < 52 || memcmp(p->data, DC_MAGIC, 8) != 0) FAIL("%s is not a directcoll program file", path);
    if (dc_le(p->data + p->size - 8, 8) != fnv1a(p->data, p->size - 8))
        FAIL("%s: checksum mismatch (a truncated or modified file)", path);
    p->checksum = dc_le(p->data + p->size - 8, 8);
    cursor c = {p->data + 8, p->data + p->size - 8, 1};
    uint32_t version = rd32(&c);
    if (version != DC_FORMAT_VERSION)
        FAIL("%s: program format version %u; this library reads version %u", path, version, DC_FORMAT_VERSION);
    p->collective = rd32(&c);
    p->nranks = rd32(&c);
    p->nblocks = rd32(&c);
    p->nscratch = rd32(&c);
    p->nsteps = rd32(&c);
    p->denominator = rd64(&c);
    uint32_t name_len = rd32(&c);
    if (!c.ok || p->collective >= DC_NCOLLECTIVES || p->nranks < 1 || p->nblocks < 1 || p->denominator < 1 ||
        p->nblocks > INT32_MAX || p->nscratch > INT32_MAX ||
        p->denominator > INT64_MAX / ((int64_t)p->nblocks + p->nscratch) / 2 || (uint64_t)(c.end - c.p) < name_len)
        FAIL("%s: a bad header", path);
    if (p->collective == DC_ALLTOALL && p->nblocks % (p->nranks * p->nranks) != 0)
        FAIL("%s: an all-to-all program of %u blocks for %u ranks (not k N^2)", path, p->nblocks, p->nranks);
    p->name = malloc(name_len + 1u);
    if (!p->name) FAIL("out of memory");
    memcpy(p->name, c.p, name_len);
    p->name[name_len] = '\0';
    c.p += name_len;
    if (p->collective == DC_REDUCE_SCATTER || p->collective == DC_ALLGATHER) {
        if ((uint64_t)(c.end - c.p) / 4 < p->nblocks) FAIL("%s: a bad header", path);
        p->owner = c.p;
        for (uint32_t b = 0; b < p->nblocks; b++)
            if (dc_le(p->owner + 4 * b, 4) >= p->nranks) FAIL("%s: block %u has no valid owner", path, b);
        c.p += 4 * (size_t)p->nblocks;
    }
    if (p->collective == DC_BROADCAST || p->collective == DC_REDUCE_TO_ROOT) {  /* the root the schedule is for */
        p->root = rd32(&c);
        if (!c.ok || p->root >= p->nranks) FAIL("%s: a bad root (%u) for %u ranks", path, p->root, p->nranks);
    }
    if ((uint64_t)(c.end - c.p) / 8 <= p->nranks) FAIL("%s: a bad header", path);
    p->rank_offsets = c.p;
    c.p += 8 * ((size_t)p->nranks + 1);
    uint64_t prev = (uint64_t)(c.p - p->data);
    for (uint32_t r = 0; r <= p->nranks; r++) {
        uint64_t at = dc_le(p->rank_offsets + 8 * r, 8);
        if (at < prev || at > p->size - 8 || (r == 0 && at != prev) || (r == p->nranks && at != p->size - 8))
            FAIL("%s: bad rank section offsets", path);
        prev = at;
    }
    for (uint32_t r = 0; r < p->nranks; r++) {
        char why[200];
        if (check_rank(p, r, why, sizeof why) != 0) FAIL("%s: %s", path, why);
    }
    return p;
fail:
    if (f) fclose(f);
    dc_program_free(p);
    return NULL;
}

void dc_program_free(dc_program *p) {
    if (!p) return;
    free(p->data);
    free(p->name);
    free(p);
}

/* ---- plans ---------------------------------------------------------------------------------------------------- */
typedef struct {
    dc_seg *v;
    size_t n, cap;
} segvec;

static int push(segvec *s, int region, int64_t off, int64_t len) {
    if (len <= 0) return 0;
    if (s->n && s->v[s->n - 1].region == region && s->v[s->n - 1].off + s->v[s->n - 1].len == off) {
        s->v[s->n - 1].len += len;  /* contiguous with the previous run */
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4;
        dc_seg *v = dc_realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (dc_seg){.region = region, .off = off, .len = len};
    return 0;
}

/* Where the work buffer's data lies in the user's buffer: data block b ([bounds[b], bounds[b+1]) of the work
 * buffer) starts at user element ustart[b] (NULL: the identity, allreduce). Reduce-scatter and allgather keep
 * rank r's blocks, in block order, in its MPI block [r count / N, (r + 1) count / N) (runtime/program.mpi_order). */
typedef struct {
    int64_t count, nblocks;
    const int64_t *bounds, *ustart;
    const dc_a2a *a2a;       /* all-to-all: its layout (dc_alltoall.c), else NULL */
} layout;

/* an all-to-all run [a, a + len) of the coordinate as runs of the sendbuf (region 2), the recvbuf (region 0) and
 * the scratch region (1), cut at block boundaries */
static int push_a2a(segvec *s, const dc_a2a *A, int64_t a, int64_t len) {
    for (int64_t x = a, end = a + len; x < end;) {
        int region = 0;
        int64_t off = 0, stop = dc_a2a_place(A, x, &region, &off);
        stop = stop < end ? stop : end;
        if (stop <= x || push(s, region, off, stop - x) != 0) return -1;
        x = stop;
    }
    return 0;
}

/* the work-buffer run [a, a + len) as runs of the user's buffer (region 0) and of the scratch blocks (region 1) */
static int push_work(segvec *s, const layout *L, int64_t a, int64_t len) {
    int64_t split = a < L->count ? (a + len < L->count ? a + len : L->count) : a;
    if (L->ustart == NULL) {
        if (push(s, 0, a, split - a) != 0) return -1;
    } else if (split > a) {
        int64_t lo = 0, hi = L->nblocks;  /* the block holding a: the last b with bounds[b] <= a */
        while (hi - lo > 1) {
            int64_t mid = (lo + hi) / 2;
            if (L->bounds[mid] <= a) lo = mid;
            else hi = mid;
        }
        for (int64_t x = a, b = lo; x < split; b++) {
            int64_t end = L->bounds[b + 1] < split ? L->bounds[b + 1] : split;
            if (end > x && push(s, 0, L->ustart[b] + (x - L->bounds[b]), end - x) != 0) return -1;
            x = end > x ? end : x;
        }
    }
    return push(s, 1, (split > L->count ? split : L->count) - L->count, a + len - split);
}

static int one_region(const segvec *s) {
    for (size_t i = 1; i < s->n; i++)
        if (s->v[i].region != s->v[0].region) return 0;
    return 1;
}

typedef struct {
    int region;
    int64_t lo, hi, reach;  /* reach: the largest hi of the spans of its region up to it (in sorted order) */
} span;

static int span_cmp(const void *x, const void *y) {
    const span *a = x, *b = y;
    if (a->region != b->region) return a->region - b->region;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

static void sort_spans(span *sp, size_t n) {
    if (n == 0) return;
    qsort(sp, n, sizeof *sp, span_cmp);
    for (size_t i = 0; i < n; i++)
        sp[i].reach = i && sp[i - 1].region == sp[i].region && sp[i - 1].reach > sp[i].hi ? sp[i - 1].reach : sp[i].hi;
}

/* whether a run overlaps any of the sorted spans (the runs the step's in-place sends read) */
static int overlaps(const span *sp, size_t n, const dc_seg *g) {
    size_t lo = 0, hi = n;  /* the first span at or after (g's region, g's end) */
    span key = {g->region, g->off + g->len, 0, 0};
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (span_cmp(&sp[mid], &key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && sp[lo - 1].region == g->region && sp[lo - 1].reach > g->off;
}

/* A derived datatype of the message elements [lo, hi) of runs (several runs of one region, offsets from the
 * region's start), committed into *type. */
static int runs_type(const dc_seg *runs, size_t nruns, int64_t lo, int64_t hi, MPI_Datatype datatype,
                     MPI_Aint extent, MPI_Datatype *type) {
    int *lens = dc_malloc(nruns * sizeof *lens);
    MPI_Aint *displs = dc_malloc(nruns * sizeof *displs);
    int rc = -1, k = 0;
    if (lens && displs) {
        for (size_t i = 0, at = 0; i < nruns; at += (size_t)runs[i].len, i++) {
            int64_t a = (int64_t)at > lo ? (int64_t)at : lo, b = (int64_t)at + runs[i].len < hi ? (int64_t)at + runs[i].len : hi;
            if (b <= a) continue;
            lens[k] = (int)(b - a);
            displs[k++] = (MPI_Aint)(runs[i].off + (a - (int64_t)at)) * extent;
        }
        if (PMPI_Type_create_hindexed(k, lens, displs, datatype, type) == MPI_SUCCESS &&
            PMPI_Type_commit(type) == MPI_SUCCESS)
            rc = 0;
    }
    free(lens);
    free(displs);
    return rc;
}

/* How a message of m->len elements travels: in m->nseg segments of m->seglen elements (DC_SEGMENT_BYTES), the
 * same on both ends since both know its length and the datatype. */
int64_t dc_segment_bytes = DC_SEGMENT_BYTES;

static void segment(dc_msg *m, MPI_Aint extent) {
    int64_t per = dc_segment_bytes / (extent > 0 ? extent : 1);
    per = per > 0 ? per : 1;
    m->nseg = m->len > per ? (int)((m->len + per - 1) / per) : 1;
    m->seglen = m->nseg > 1 ? per : m->len;
}

/* Make a message direct where it can be: one run (sent at its offset) or several (a derived datatype, one per
 * segment when it travels in several). */
static int make_direct(dc_msg *m, const dc_seg *runs, size_t nseg, MPI_Datatype datatype, MPI_Aint extent) {
    m->direct = 1;
    m->region = runs[0].region;
    if (nseg == 1) {
        m->off = runs[0].off;
        return 0;
    }
    if (m->nseg == 1) return runs_type(runs, nseg, 0, m->len, datatype, extent, &m->type);
    if (!(m->segtype = dc_malloc((size_t)m->nseg * sizeof *m->segtype))) return -1;
    for (int i = 0; i < m->nseg; i++) m->segtype[i] = MPI_DATATYPE_NULL;
    for (int i = 0; i < m->nseg; i++) {
        int64_t lo = (int64_t)i * m->seglen, hi = lo + m->seglen < m->len ? lo + m->seglen : m->len;
        if (runs_type(runs, nseg, lo, hi, datatype, extent, &m->segtype[i]) != 0) return -1;
    }
    return 0;
}

/* Split the destination runs of a reduction at the cells of `init` not yet `claimed` (recvbuf does not hold them:
 * the reduction writes sendbuf (op) incoming there, three operands), which it then claims. */
static int push_run(segvec *o, int region, int init, int64_t off, int64_t len) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 4;
        dc_seg *v = dc_realloc(o->v, cap * sizeof *v);
        if (!v) return -1;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = (dc_seg){.region = region, .init = init, .off = off, .len = len};
    return 0;
}

typedef struct {
    segvec *out;
    const dc_ivset *claimed;
} splitter;

static int claimed_part(void *arg, int64_t a, int64_t b, int inside) {  /* inside: claimed already, op= */
    return push_run(((splitter *)arg)->out, 0, !inside, a, b - a);
}

static int init_part(void *arg, int64_t a, int64_t b, int inside) {  /* inside: recvbuf does not hold it yet */
    splitter *w = arg;
    return inside ? dc_iv_walk(w->claimed, a, b, claimed_part, w) : push_run(w->out, 0, 0, a, b - a);
}

static int split_init(dc_msg *m, const dc_ivset *init, dc_ivset *claimed) {
    segvec out = {0};
    splitter w = {&out, claimed};
    for (size_t i = 0; i < m->ndst; i++) {
        const dc_seg *g = &m->dst[i];
        size_t first = out.n;
        if (g->region != 0 ? push_run(&out, g->region, 0, g->off, g->len) != 0
                           : dc_iv_walk(init, g->off, g->off + g->len, init_part, &w) != 0) {
            free(out.v);
            return -1;
        }
        for (size_t k = first; k < out.n; k++) {  /* claimed run by run: a later run onto the same cells is op= */
            if (out.v[k].init && dc_iv_add(claimed, out.v[k].off, out.v[k].off + out.v[k].len) != 0) {
                free(out.v);
                return -1;
            }
        }
    }
    free(m->dst);
    m->dst = out.v;
    m->ndst = out.n;
    return 0;
}

/* whether any run of m's destination overlaps the sorted spans */
static int dst_overlaps(const span *sp, size_t n, const dc_msg *m) {
    for (size_t s = 0; s < m->ndst; s++)
        if (overlaps(sp, n, &m->dst[s])) return 1;
    return 0;
}

/* ---- reading sendbuf until recvbuf is written (from_send) ----------------------------------------------------- */
typedef struct {
    segvec *out;
    const dc_ivset *also;  /* minus_part: a second set the part must also lie outside of */
} walker;

/* a read of recvbuf: the parts already written there, the others from sendbuf (region 2) */
static int read_part(void *arg, int64_t a, int64_t b, int inside) {
    return push(((walker *)arg)->out, inside ? 0 : 2, a, b - a);
}

static int split_reads(segvec *src, const dc_ivset *written) {
    segvec out = {0};
    walker w = {&out, NULL};
    for (size_t i = 0; i < src->n; i++) {
        const dc_seg *g = &src->v[i];
        if ((g->region != 0 ? push(&out, g->region, g->off, g->len) : dc_iv_walk(written, g->off, g->off + g->len,
                                                                                  read_part, &w)) != 0) {
            free(out.v);
            return -1;
        }
    }
    free(src->v);
    *src = out;
    return 0;
}

/* the parts outside one set and then outside w->also */
static int outside_part(void *arg, int64_t a, int64_t b, int inside) {
    walker *w = arg;
    if (inside) return 0;
    if (w->also) {
        walker inner = {w->out, NULL};
        return dc_iv_walk(w->also, a, b, outside_part, &inner);
    }
    return push(w->out, 0, a, b - a);
}

static int push_any(segvec *s, const layout *L, int64_t a, int64_t len) {
    return L->a2a ? push_a2a(s, L->a2a, a, len) : push_work(s, L, a, len);
}

/* ---- one message's pieces and how they travel (runtime/program.py, message_layout) ---------------------------- */
typedef struct {
    int64_t a, b, d;         /* source elements [a, b) and destination start d, after rounding; b > a */
    size_t idx;              /* its index among the message's pieces (sorting) */
} piece;

typedef struct {
    piece *v, *sorted;
    int64_t *at, *u;         /* per piece: its offset in the message; the union's intervals, pairs */
    size_t n, cap, nu;
} pieces;

static int piece_cmp(const void *x, const void *y) {
    const piece *a = x, *b = y;
    if (a->a != b->a) return (a->a > b->a) - (a->a < b->a);
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int add_piece(pieces *P, int64_t a, int64_t b, int64_t d) {
    if (P->n == P->cap) {
        size_t cap = P->cap ? 2 * P->cap : 16;
        piece *v = dc_realloc(P->v, cap * sizeof *v), *w = v ? dc_realloc(P->sorted, cap * sizeof *w) : NULL;
        if (v) P->v = v;
        if (w) P->sorted = w;
        int64_t *at = w ? dc_realloc(P->at, cap * sizeof *at) : NULL, *u = at ? dc_realloc(P->u, 2 * cap * sizeof *u) : NULL;
        if (at) P->at = at;
        if (u) P->u = u;
        if (!u) return -1;
        P->cap = cap;
    }
    P->v[P->n] = (piece){a, b, d, P->n};
    P->n++;
    return 0;
}

/* Whether the pieces read overlapping source ranges (1) or are pairwise disjoint (0: the message is their
 * concatenation in piece order). Overlapping: the message carries the union of their ranges once, in ascending
 * order (P->u, P->nu intervals), and piece k starts at message offset P->at[k]: message_layout's rule, which both
 * ends apply to the same rounded pieces, so sender and receiver agree. */
static int union_layout(pieces *P) {
    if (P->n < 2) return 0;
    memcpy(P->sorted, P->v, P->n * sizeof *P->v);
    qsort(P->sorted, P->n, sizeof *P->sorted, piece_cmp);
    int64_t reach = P->sorted[0].b;  /* the largest end so far */
    size_t i = 1;
    for (; i < P->n && P->sorted[i].a >= reach; i++) reach = P->sorted[i].b > reach ? P->sorted[i].b : reach;
    if (i == P->n) return 0;
    int64_t start = P->sorted[0].a, stop = P->sorted[0].b, where = 0;
    P->nu = 0;
    for (i = 0; i < P->n; i++) {
        const piece *q = &P->sorted[i];
        if (i > 0 && q->a >= stop) {  /* a new interval of the union */
            P->u[2 * P->nu] = start;
            P->u[2 * P->nu + 1] = stop;
            P->nu++;
            where += stop - start;
            start = q->a;
            stop = q->b;
        } else if (q->b > stop) {
            stop = q->b;
        }
        P->at[q->idx] = where + q->a - start;
    }
    P->u[2 * P->nu] = start;
    P->u[2 * P->nu + 1] = stop;
    P->nu++;
    return 1;
}

dc_plan *dc_plan_build(const dc_program *p, int rank, int64_t count, MPI_Datatype datatype, MPI_Aint extent,
                       int from_send, char *err, size_t errlen) {
    const size_t nbound = (size_t)p->nblocks + p->nscratch + 1;
    int64_t *bounds = dc_malloc(nbound * sizeof *bounds), *ustart = NULL;
    const int a2a = p->collective == DC_ALLTOALL;
    dc_a2a A = {0};
    dc_plan *plan = dc_calloc(1, sizeof *plan);
    span *reads = NULL;
    size_t nreads = 0, reads_cap = 0;
    dc_ivset written = {0}, copied = {0}, reduced = {0};  /* from_send: recvbuf's cells written so far, this step */
    pieces P = {0};  /* the pieces of the message being read */
    const int rooted_reduce = p->collective == DC_REDUCE_TO_ROOT;
    if (!bounds || !plan) FAIL("out of memory");
    plan->from_send = from_send;
    if ((p->owner || a2a) && count % p->nranks) FAIL("%lld elements do not split into %u MPI blocks", (long long)count,
                                            p->nranks);
    if (dc_boundaries(p, count, bounds) != 0) FAIL("out of memory");
    plan->program = p;
    plan->count = count;
    plan->datatype = datatype;
    plan->extent = extent;
    plan->scratch_elems = bounds[nbound - 1] - count;
    if (p->owner) {  /* rank r's blocks fill its MPI block in block order */
        ustart = dc_malloc((size_t)p->nblocks * sizeof *ustart);
        int64_t *next = dc_calloc(p->nranks, sizeof *next);
        if (!ustart || !next) {
            free(next);
            FAIL("out of memory");
        }
        for (uint32_t b = 0; b < p->nblocks; b++) {
            uint32_t r = (uint32_t)dc_le(p->owner + 4 * b, 4);
            ustart[b] = (int64_t)r * (count / p->nranks) + next[r];
            next[r] += bounds[b + 1] - bounds[b];
        }
        free(next);
    }
    if (a2a) {
        if (from_send) FAIL("an all-to-all plan reads its sendbuf as a region of its own");
        A = (dc_a2a){rank, p->nranks, p->nblocks / ((int64_t)p->nranks * p->nranks), count / p->nranks, count,
                     p->nblocks, (int64_t)nbound - 1, bounds, NULL};
        if ((plan->scratch_elems = dc_a2a_layout(p, &A)) < 0) FAIL("out of memory");
    }
    const layout L = {count, p->nblocks, bounds, ustart, a2a ? &A : NULL};
    plan->nsteps = p->nsteps;
    plan->steps = dc_calloc(p->nsteps ? p->nsteps : 1, sizeof *plan->steps);
    if (!plan->steps) FAIL("out of memory");
    cursor c = {p->data + dc_le(p->rank_offsets + 8 * (uint32_t)rank, 8), p->data + p->size, 1};
    for (uint32_t t = 0; t < p->nsteps; t++) {
        dc_step *st = &plan->steps[t];
        uint32_t n[3] = {rd32(&c), rd32(&c), rd32(&c)};
        dc_msg *lists[3];
        dc_msg **owner[3] = {&st->send, &st->recv, &st->local};  /* the step owns each list at once (dc_plan_free) */
        for (int kind = 0; kind < 3; kind++) {
            *owner[kind] = lists[kind] = dc_calloc(n[kind] ? n[kind] : 1, sizeof(dc_msg));
            if (!lists[kind]) FAIL("out of memory");
        }
        int64_t stage = 0;
        nreads = 0;
        for (int kind = 0; kind < 3; kind++) {
            size_t *kept = kind == 0 ? &st->nsend : kind == 1 ? &st->nrecv : &st->nlocal;
            for (uint32_t i = 0; i < n[kind]; i++) {
                dc_msg *m = &lists[kind][*kept];
                m->peer = kind < 2 ? (int)rd32(&c) : rank;
                m->op = kind > 0 ? (int)rd32(&c) : DC_COPY;
                if (m->op == DC_REDUCE && (p->collective == DC_ALLGATHER || p->collective == DC_BROADCAST || a2a))
                    FAIL("a copying program that reduces");
                m->type = MPI_DATATYPE_NULL;
                uint32_t np = rd32(&c);
                segvec src = {0}, dst = {0};
                P.n = 0;
                for (uint32_t j = 0; j < np; j++) {
                    int64_t xa = rd64(&c), xb = rd64(&c), xd = kind ? rd64(&c) : 0;
                    int64_t a = dc_element(p, bounds, xa), b = dc_element(p, bounds, xb);
                    if (b > a && add_piece(&P, a, b, kind ? dc_element(p, bounds, xd) : 0) != 0) FAIL("out of memory");
                }
                /* a message (not a local operation) whose pieces read overlapping ranges carries their union once */
                const int merged = kind < 2 && union_layout(&P);
                for (size_t j = 0; merged && j < P.nu; j++) {
                    m->len += P.u[2 * j + 1] - P.u[2 * j];
                    if (kind == 0 && push_any(&src, &L, P.u[2 * j], P.u[2 * j + 1] - P.u[2 * j]) != 0) {
                        free(src.v);
                        FAIL("out of memory");
                    }
                }
                for (size_t j = 0; j < P.n; j++) {
                    const int64_t a = P.v[j].a, len = P.v[j].b - P.v[j].a;
                    if (!merged) m->len += len;
                    if ((kind != 1 && !merged && push_any(&src, &L, a, len) != 0) ||
                        (kind && push_any(&dst, &L, P.v[j].d, len) != 0)) {
                        free(src.v);
                        free(dst.v);
                        FAIL("out of memory");
                    }
                }
                if (m->len == 0) {  /* empty at this count on both ends: no message */
                    free(src.v);
                    free(dst.v);
                    memset(m, 0, sizeof *m);
                    continue;
                }
                for (size_t g = 0; g < dst.n; g++) {
                    if (dst.v[g].region == 2) {  /* the sendbuf is the user's, read only */
                        free(src.v);
                        free(dst.v);
                        FAIL("an all-to-all program that writes into a rank's own send part");
                    }
                }
                if (from_send && kind != 1 && split_reads(&src, &written) != 0) {
                    free(src.v);
                    free(dst.v);
                    FAIL("out of memory");
                }
                m->src = src.v;
                m->nsrc = src.n;
                m->dst = dst.v;
                m->ndst = dst.n;
                (*kept)++;
                if (merged && kind == 1) {  /* piece j reads the message from P.at[j] */
                    if (!(m->slice = dc_malloc(P.n * sizeof *m->slice))) FAIL("out of memory");
                    for (size_t j = 0; j < P.n; j++) m->slice[j] = (dc_slice){P.at[j], P.v[j].b - P.v[j].a};
                    m->nslice = P.n;
                }
                for (size_t g = 0; from_send && g < dst.n; g++)
                    if (dst.v[g].region == 0 &&
                        dc_iv_add(m->op == DC_COPY ? &copied : &reduced, dst.v[g].off, dst.v[g].off + dst.v[g].len))
                        FAIL("out of memory");
                if (m->len > INT_MAX) FAIL("a message of %lld elements (more than an int counts)", (long long)m->len);
                if (kind < 2) segment(m, extent);
                else m->nseg = 1, m->seglen = m->len;
                if (kind == 0 && one_region(&src)) {  /* an in-place send: what it reads must not change */
                    if (make_direct(m, src.v, src.n, datatype, extent) != 0) FAIL("cannot build a derived datatype");
                    for (size_t s = 0; s < src.n; s++) {
                        if (nreads == reads_cap) {
                            reads_cap = reads_cap ? 2 * reads_cap : 16;
                            span *v = dc_realloc(reads, reads_cap * sizeof *v);
                            if (!v) FAIL("out of memory");
                            reads = v;
                        }
                        reads[nreads++] = (span){src.v[s].region, src.v[s].off, src.v[s].off + src.v[s].len, 0};
                    }
                } else if (kind != 1) {  /* packed sends and local operations go through the staging buffer */
                    m->stage = stage;
                    stage += m->len;
                }  /* receives are decided below, once every in-place send of the step is known */
            }
        }
        sort_spans(reads, nreads);
        /* pipelined: no reduced cell is sent in place or copied into in the step, one message per reducing peer */
        size_t ncopy = 0;
        for (int kind = 1; kind < 3; kind++) {
            const dc_msg *list = kind == 1 ? st->recv : st->local;
            for (size_t i = 0, n = kind == 1 ? st->nrecv : st->nlocal; i < n; i++)
                ncopy += list[i].op == DC_COPY ? list[i].ndst : 0;
        }
        span *copies = dc_malloc((ncopy ? ncopy : 1) * sizeof *copies);
        if (!copies) FAIL("out of memory");
        ncopy = 0;
        for (int kind = 1; kind < 3; kind++) {
            const dc_msg *list = kind == 1 ? st->recv : st->local;
            for (size_t i = 0, n = kind == 1 ? st->nrecv : st->nlocal; i < n; i++)
                for (size_t g = 0; list[i].op == DC_COPY && g < list[i].ndst; g++)
                    copies[ncopy++] = (span){list[i].dst[g].region, list[i].dst[g].off,
                                             list[i].dst[g].off + list[i].dst[g].len, 0};
        }
        sort_spans(copies, ncopy);
        st->pipelined = 0;
        for (size_t i = 0; i < st->nrecv; i++) {
            const dc_msg *m = &st->recv[i];
            if (m->op != DC_REDUCE) continue;
            int ok = !dst_overlaps(reads, nreads, m) && !dst_overlaps(copies, ncopy, m) && m->nslice == 0;
            for (size_t j = 0; ok && j < st->nrecv; j++) ok = j == i || st->recv[j].peer != m->peer;
            if (!ok) {
                st->pipelined = 0;
                break;
            }
            st->pipelined |= m->nseg > 1;  /* worth a window only when some reduced receive is segmented */
        }
        free(copies);
        for (size_t i = 0; i < st->nrecv; i++) {  /* a copy lands in place unless it overwrites what is sent */
            dc_msg *m = &st->recv[i];
            if (st->pipelined && m->op == DC_REDUCE) continue;  /* through the window slots */
            segvec dst = {m->dst, m->ndst, m->ndst};
            int direct = m->op == DC_COPY && one_region(&dst) && m->nslice == 0;  /* slices: staged */
            for (size_t s = 0; direct && s < m->ndst; s++)
                direct = !overlaps(reads, m->ndst ? nreads : 0, &m->dst[s]);
            if (direct) {
                if (make_direct(m, m->dst, m->ndst, datatype, extent) != 0) FAIL("cannot build a derived datatype");
            } else {
                m->stage = stage;
                stage += m->len;
            }
        }
        if (stage > plan->stage_elems) plan->stage_elems = stage;
        if (from_send) {  /* reductions into cells recvbuf does not hold yet (and no copy fills): from sendbuf */
            segvec init = {0};
            walker w = {&init, &copied};
            for (size_t i = 0; i < reduced.n; i++)
                if (dc_iv_walk(&written, reduced.v[2 * i], reduced.v[2 * i + 1], outside_part, &w) != 0) {
                    free(init.v);
                    FAIL("out of memory");
                }
            /* the first reduction into each such cell writes sendbuf (op) incoming (three operands); only cells
             * none claims (none, for the programs the library compiles) are still copied up front */
            dc_ivset pending = {0}, claimed = {0};
            int bad = 0;
            for (size_t i = 0; i < init.n && !bad; i++) bad = dc_iv_add(&pending, init.v[i].off, init.v[i].off + init.v[i].len);
            for (int kind = 1; kind < 3 && !bad; kind++) {
                dc_msg *list = kind == 1 ? st->recv : st->local;
                for (size_t i = 0, n = kind == 1 ? st->nrecv : st->nlocal; i < n && !bad; i++)
                    if (list[i].op == DC_REDUCE) bad = split_init(&list[i], &pending, &claimed);
            }
            init.n = 0;
            walker rest = {&init, NULL};
            for (size_t i = 0; i < pending.n && !bad; i++)
                bad = dc_iv_walk(&claimed, pending.v[2 * i], pending.v[2 * i + 1], outside_part, &rest);
            dc_iv_free(&pending);
            dc_iv_free(&claimed);
            if (bad) {
                free(init.v);
                FAIL("out of memory");
            }
            st->init = init.v;
            st->ninit = init.n;
            for (size_t i = 0; i < copied.n + reduced.n; i++) {
                const int64_t *v = i < copied.n ? copied.v + 2 * i : reduced.v + 2 * (i - copied.n);
                if (dc_iv_add(&written, v[0], v[1]) != 0) FAIL("out of memory");
            }
            copied.n = reduced.n = 0;
        }
        /* Over MPI, a step's sends need not complete by its end when nothing the step writes once they are posted
         * overlaps what they read: its staged receives and local operations (applied after the wait), the cells it
         * copies from sendbuf. Its in-place receives and pipelined reductions overlap no in-place send by
         * construction, and staged sends read the staging buffer, which only a later step's packing writes. A later
         * step that writes anything (writes) first waits for the sends still in flight, and so does the call's end. */
        st->writes = st->nrecv > 0 || st->nlocal > 0 || st->ninit > 0;
        for (size_t i = 0; i < st->nsend && !st->writes; i++) st->writes = !st->send[i].direct;
        int clash = 0;
        for (size_t i = 0; i < st->nrecv && !clash; i++)
            clash = !st->recv[i].direct && dst_overlaps(reads, nreads, &st->recv[i]);
        for (size_t i = 0; i < st->nlocal && !clash; i++) clash = dst_overlaps(reads, nreads, &st->local[i]);
        for (size_t i = 0; i < st->ninit && !clash; i++) clash = overlaps(reads, nreads, &st->init[i]);
        st->defer = !clash;
    }
    if (from_send) {  /* cells no step writes keep sendbuf's values (reduce-scatter: only the rank's block counts) */
        segvec final = {0};
        walker w = {&final, NULL};
        const int64_t lo = p->collective == DC_REDUCE_SCATTER ? (int64_t)rank * (count / p->nranks) : 0;
        const int64_t hi = p->collective == DC_REDUCE_SCATTER ? lo + count / p->nranks
                           : rooted_reduce && (uint32_t)rank != p->root ? 0  /* a reduce's result: at the root */
                                                                        : count;
        if (dc_iv_walk(&written, lo, hi, outside_part, &w) != 0) {
            free(final.v);
            FAIL("out of memory");
        }
        plan->final = final.v;
        plan->nfinal = final.n;
    }
    if (a2a && count > 0) {  /* the diagonal pair (rank, rank): from sendbuf to recvbuf, same offset */
        if (!(plan->final = dc_malloc(sizeof *plan->final))) FAIL("out of memory");
        plan->final[0] = (dc_seg){.region = 0, .off = (int64_t)rank * A.m, .len = A.m};
        plan->nfinal = 1;
    }
    if (!c.ok) FAIL("the program ended early");
    size_t most = 1, carried = 0;  /* carried: requests of earlier steps' sends still in flight (dc_execute) */
    int64_t window = 0;  /* elements of one window slot: the longest segment of a pipelined reduced receive */
    for (size_t t = 0; t < plan->nsteps; t++) {
        dc_step *st = &plan->steps[t];
        size_t sends = 0;
        for (size_t i = 0; i < st->nsend; i++) sends += (size_t)st->send[i].nseg;
        st->nreq = (st->pipelined ? DC_WINDOW : 0) + sends;
        for (size_t i = 0; i < st->nrecv; i++) {
            if (!(st->pipelined && st->recv[i].op == DC_REDUCE)) st->nreq += (size_t)st->recv[i].nseg;
            else if (st->recv[i].seglen > window) window = st->recv[i].seglen;
        }
        if (st->writes) carried = 0;
        most = carried + st->nreq > most ? carried + st->nreq : most;
        carried = st->defer ? carried + sends : 0;
    }
    plan->window = plan->stage_elems;
    plan->stage_elems += DC_WINDOW * window;
    plan->nreqs = most;
    plan->reqs = dc_malloc(most * sizeof *plan->reqs);
    plan->peers = dc_calloc(most, sizeof *plan->peers);
    plan->idx = dc_calloc(most, sizeof *plan->idx);
    if (!plan->reqs || !plan->peers || !plan->idx) FAIL("out of memory");
    for (size_t i = 0; i < most; i++) plan->reqs[i] = MPI_REQUEST_NULL;
    plan->scratch = dc_malloc((size_t)(plan->scratch_elems ? plan->scratch_elems : 1) * (size_t)extent);
    plan->stage = dc_malloc((size_t)(plan->stage_elems ? plan->stage_elems : 1) * (size_t)extent);
    if (!plan->scratch || !plan->stage) FAIL("out of memory for %lld scratch and %lld staging elements",
                                             (long long)plan->scratch_elems, (long long)plan->stage_elems);
    if ((p->collective == DC_REDUCE_SCATTER || a2a || (rooted_reduce && (uint32_t)rank != p->root)) &&
        !(plan->work = dc_malloc((size_t)(count ? count : 1) * (size_t)extent)))
        FAIL("out of memory for a work copy of %lld elements", (long long)count);
    free(bounds);
    free(ustart);
    free(A.roff);
    free(reads);
    dc_iv_free(&written);
    dc_iv_free(&copied);
    dc_iv_free(&reduced);
    free(P.v);
    free(P.sorted);
    free(P.at);
    free(P.u);
    return plan;
fail:
    free(bounds);
    free(ustart);
    free(A.roff);
    free(reads);
    dc_iv_free(&written);
    dc_iv_free(&copied);
    dc_iv_free(&reduced);
    free(P.v);
    free(P.sorted);
    free(P.at);
    free(P.u);
    dc_plan_free(plan);
    return NULL;
}

void dc_plan_free(dc_plan *plan) {
    if (!plan) return;
    for (size_t t = 0; plan->steps && t < plan->nsteps; t++) {
        dc_step *st = &plan->steps[t];
        dc_msg *lists[3] = {st->send, st->recv, st->local};
        size_t n[3] = {st->nsend, st->nrecv, st->nlocal};
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; lists[k] && i < n[k]; i++) {
                if (lists[k][i].type != MPI_DATATYPE_NULL) PMPI_Type_free(&lists[k][i].type);
                for (int g = 0; lists[k][i].segtype && g < lists[k][i].nseg; g++)
                    if (lists[k][i].segtype[g] != MPI_DATATYPE_NULL) PMPI_Type_free(&lists[k][i].segtype[g]);
                free(lists[k][i].segtype);
                free(lists[k][i].src);
                free(lists[k][i].dst);
                free(lists[k][i].slice);
            }
            free(lists[k]);
        }
        free(st->init);
    }
    free(plan->final);
    free(plan->steps);
    free(plan->scratch);
    free(plan->stage);
    free(plan->reqs);
    free(plan->peers);
    free(plan->idx);
    free(plan->work);
    free(plan);
}
