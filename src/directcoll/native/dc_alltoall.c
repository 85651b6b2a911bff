/* libdirectcoll: where an all-to-all program's coordinate lies on one rank (docs/runtime.md, "Program files", the
 * twin of runtime/program.py's compile_alltoall).
 *
 * The coordinate is the N ranks' send buffers: N^2 k blocks, pair (i, j)'s k blocks at (i N + j) k, each pair m
 * elements. On rank r, pairs (r, j) are its sendbuf (region 2, read only), pairs (i, r) with i != r its recvbuf at
 * i m (region 0), and every other block it touches (blocks it relays, scratch blocks) lies in the plan's scratch
 * region (1), in block order. Element offsets come from dc_coord.c, as the plans' (dc_program.c) do.
 */
#include <stdlib.h>

#include "dc_internal.h"

typedef struct {
    const unsigned char *p, *end;
    int ok;
} reader;

static uint64_t get(reader *c, int n) {
    if (!c->ok || c->end - c->p < n) {
        c->ok = 0;
        return 0;
    }
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | c->p[i];
    c->p += n;
    return v;
}

/* the block holding coordinate element x: the last b < nall with bounds[b] <= x */
static int64_t block_of(const dc_a2a *a, int64_t x) {
    int64_t lo = 0, hi = a->nall;
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (a->bounds[mid] <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

static int outside(const dc_a2a *a, int64_t b) {
    if (b >= a->nblocks) return 1;
    int64_t pair = b / a->k;
    return pair / a->n != a->rank && pair % a->n != a->rank;
}

static void mark(dc_a2a *a, int64_t lo, int64_t hi) {
    for (int64_t b = block_of(a, lo); b < a->nall && a->bounds[b] < hi; b++)
        if (outside(a, b)) a->roff[b] = 0;
}

int64_t dc_a2a_layout(const dc_program *p, dc_a2a *a) {
    if (!(a->roff = dc_malloc((size_t)(a->nall ? a->nall : 1) * sizeof *a->roff))) return -1;
    for (int64_t b = 0; b < a->nall; b++) a->roff[b] = -1;
    reader c = {p->data + dc_le(p->rank_offsets + 8 * (uint32_t)a->rank, 8), p->data + p->size, 1};
    for (uint32_t t = 0; t < p->nsteps && c.ok; t++) {
        uint32_t n[3] = {(uint32_t)get(&c, 4), (uint32_t)get(&c, 4), (uint32_t)get(&c, 4)};
        for (int kind = 0; kind < 3; kind++) {
            for (uint32_t i = 0; i < n[kind] && c.ok; i++) {
                get(&c, 4 * ((kind < 2) + (kind > 0)));  /* peer (sends, receives), op (receives, local) */
                uint32_t np = (uint32_t)get(&c, 4);
                for (uint32_t j = 0; j < np && c.ok; j++) {
                    int64_t xa = (int64_t)get(&c, 8), xb = (int64_t)get(&c, 8), xd = kind ? (int64_t)get(&c, 8) : 0;
                    int64_t lo = dc_element(p, a->bounds, xa), hi = dc_element(p, a->bounds, xb);
                    if (hi <= lo) continue;
                    if (kind != 1) mark(a, lo, hi);  /* what it reads */
                    if (kind) {                       /* what it writes */
                        int64_t d = dc_element(p, a->bounds, xd);
                        mark(a, d, d + (hi - lo));
                    }
                }
            }
        }
    }
    int64_t total = 0;
    for (int64_t b = 0; b < a->nall; b++) {
        if (a->roff[b] < 0) continue;
        a->roff[b] = total;
        total += a->bounds[b + 1] - a->bounds[b];
    }
    return total;
}

int64_t dc_a2a_place(const dc_a2a *a, int64_t x, int *region, int64_t *off) {
    int64_t b = block_of(a, x);
    if (outside(a, b)) {
        *region = 1;
        *off = a->roff[b] + (x - a->bounds[b]);
    } else {
        int64_t pair = b / a->k, i = pair / a->n;
        *region = i == a->rank ? 2 : 0;
        *off = i == a->rank ? x - (int64_t)a->rank * a->count : i * a->m + (x - pair * a->m);
    }
    return a->bounds[b + 1];
}
