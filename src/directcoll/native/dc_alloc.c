/* libdirectcoll: the allocations of a call's setup, and a test-only way to make them fail (docs/runtime.md,
 * "Failing safe").
 *
 * Everything a served call allocates is allocated before its ranks agree to run it (the communicator's state, the
 * plan, the shared-memory bookkeeping; dc_cache_plan), through these three functions: a rank that runs out of memory
 * there tells the others in the agreement and every rank falls through together. After the agreement nothing is
 * allocated, so the only errors left are MPI's.
 *
 * For the fault-injection tests, $DIRECTCOLL_TEST_FAIL_ALLOC makes some of them fail on one rank, as if memory ran out
 * there: R:N the N-th (counted from 1, in this process) on the rank R of MPI_COMM_WORLD, R:N+ that one and every
 * later one, R:%N every N-th. It is read once, at the first of them, and only when set; any other value does
 * nothing. Not for production use.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "dc_internal.h"

enum { FAIL_NONE, FAIL_ONE, FAIL_FROM, FAIL_EVERY };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int mode = FAIL_NONE;   /* written once, under once */
static long long nth;
static atomic_llong counted;

static void read_test_setting(void) {
    const char *v = getenv("DIRECTCOLL_TEST_FAIL_ALLOC");
    if (!v || !v[0]) return;
    int initialized = 0, rank = -1;
    PMPI_Initialized(&initialized);
    if (initialized) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *end = NULL;
    long r = strtol(v, &end, 10);
    if (end == v || *end != ':' || r != rank) return;
    const char *n = end + 1;
    const int every = *n == '%';
    n += every;
    long long k = strtoll(n, &end, 10);
    if (end == n || k < 1 || (*end != '\0' && !(*end == '+' && end[1] == '\0' && !every))) return;
    nth = k;
    mode = every ? FAIL_EVERY : *end == '+' ? FAIL_FROM : FAIL_ONE;
}

/* whether this allocation is one the test setting makes fail */
static int fails(void) {
    pthread_once(&once, read_test_setting);
    if (mode == FAIL_NONE) return 0;
    const long long k = atomic_fetch_add(&counted, 1) + 1;
    return mode == FAIL_ONE ? k == nth : mode == FAIL_FROM ? k >= nth : k % nth == 0;
}

void *dc_malloc(size_t n) { return fails() ? NULL : malloc(n); }

void *dc_calloc(size_t n, size_t size) { return fails() ? NULL : calloc(n, size); }

void *dc_realloc(void *p, size_t n) { return fails() ? NULL : realloc(p, n); }
