/* libdirectcoll: sets of element intervals, for the plans that read sendbuf until recvbuf is written (an allreduce
 * not in place: the cells of recvbuf a step has not written yet still hold sendbuf's values, so reads go to
 * sendbuf and no up-front copy is needed).
 */
#include <stdlib.h>
#include <string.h>

#include "dc_internal.h"

/* index of the first interval ending after x */
static size_t first_after(const dc_ivset *s, int64_t x) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[2 * mid + 1] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int dc_iv_add(dc_ivset *s, int64_t lo, int64_t hi) {
    if (hi <= lo) return 0;
    size_t i = first_after(s, lo - 1);  /* the first interval touching or after [lo, hi) */
    size_t j = i;
    while (j < s->n && s->v[2 * j] <= hi) {  /* merge every interval touching [lo, hi) */
        if (s->v[2 * j] < lo) lo = s->v[2 * j];
        if (s->v[2 * j + 1] > hi) hi = s->v[2 * j + 1];
        j++;
    }
    if (j == i) {  /* insert */
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 8;
            int64_t *v = dc_realloc(s->v, 2 * cap * sizeof *v);
            if (!v) return -1;
            s->v = v;
            s->cap = cap;
        }
        memmove(s->v + 2 * (i + 1), s->v + 2 * i, 2 * (s->n - i) * sizeof *s->v);
        s->n++;
    } else if (j > i + 1) {  /* intervals i..j-1 become one */
        memmove(s->v + 2 * (i + 1), s->v + 2 * j, 2 * (s->n - j) * sizeof *s->v);
        s->n -= j - i - 1;
    }
    s->v[2 * i] = lo;
    s->v[2 * i + 1] = hi;
    return 0;
}

int dc_iv_walk(const dc_ivset *s, int64_t lo, int64_t hi, int (*part)(void *, int64_t, int64_t, int), void *arg) {
    for (size_t i = first_after(s, lo); lo < hi; i++) {
        int64_t a = i < s->n ? s->v[2 * i] : hi, b = i < s->n ? s->v[2 * i + 1] : hi;
        if (a > lo && part(arg, lo, a < hi ? a : hi, 0) != 0) return -1;  /* a gap before interval i */
        if (a >= hi) break;
        int64_t from = a > lo ? a : lo, to = b < hi ? b : hi;
        if (to > from && part(arg, from, to, 1) != 0) return -1;
        lo = to > lo ? to : lo;
    }
    return 0;
}

void dc_iv_free(dc_ivset *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}
