/* libdirectcoll: rounding a program's block coordinates to element offsets for one count (the twin of
 * directcoll.runtime.program.boundaries and _elements; docs/runtime.md, "Program files", "Counts").
 *
 * A program file is count-independent: piece ends are block coordinates (numerators over the denominator). A plan
 * rounds them to element offsets for one count with the same double-precision expressions as the Python programs
 * (built with -ffp-contract=off), so pieces that share an end share it in elements and tile every block for any
 * count, 0 included. Shared by the plans (dc_program.c) and the all-to-all layout (dc_alltoall.c).
 */
#include <math.h>
#include <stdlib.h>

#include "dc_internal.h"

static int64_t round_half_up(double v) { return (int64_t)floor(v + 0.5); }

int dc_boundaries(const dc_program *p, int64_t count, int64_t *bounds) {
    const int64_t nb = p->nblocks, ns = p->nscratch;
    if (p->collective == DC_ALLTOALL) {  /* count: one rank's sendbuf; every pair's k blocks split its m elements */
        const int64_t n = p->nranks, k = nb / (n * n), m = count / n;
        bounds[0] = 0;
        for (int64_t b = 0; b < nb; b++) {
            int64_t j = b % k;
            bounds[b + 1] = bounds[b] + round_half_up((double)((j + 1) * m) / (double)k) -
                            round_half_up((double)(j * m) / (double)k);
        }
    } else if (p->owner == NULL) {
        for (int64_t i = 0; i <= nb; i++) bounds[i] = round_half_up((double)(i * count) / (double)nb);
    } else {  /* every rank's blocks add up to its MPI block of count / N elements */
        const int64_t per = count / p->nranks;
        int64_t *mine = dc_calloc(p->nranks, sizeof *mine), *nth = dc_malloc((size_t)nb * sizeof *nth);
        if (!mine || !nth) {
            free(mine);
            free(nth);
            return -1;
        }
        for (int64_t b = 0; b < nb; b++) nth[b] = mine[dc_le(p->owner + 4 * b, 4)]++;
        bounds[0] = 0;
        for (int64_t b = 0; b < nb; b++) {
            double m = (double)mine[dc_le(p->owner + 4 * b, 4)];
            int64_t lo = round_half_up((double)(nth[b] * per) / m), hi = round_half_up((double)((nth[b] + 1) * per) / m);
            bounds[b + 1] = bounds[b] + (hi - lo);
        }
        free(mine);
        free(nth);
    }
    for (int64_t j = 0; j < ns; j++) {  /* scratch blocks have the sizes of the first data blocks, cyclically */
        int64_t k = j % nb;
        bounds[nb + j + 1] = bounds[nb + j] + (bounds[k + 1] - bounds[k]);
    }
    return 0;
}

int64_t dc_element(const dc_program *p, const int64_t *bounds, int64_t x) {
    const int64_t den = p->denominator, last = (int64_t)p->nblocks + p->nscratch - 1;
    int64_t block = x / den < last ? x / den : last;
    double frac = (double)(x - block * den) / (double)den;
    double scaled = frac * (double)(bounds[block + 1] - bounds[block]);
    return bounds[block] + round_half_up(scaled);
}
