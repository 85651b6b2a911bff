/* An unmodified MPI program for tests/test_native.py: MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather or
 * MPI_Alltoall
 * (served by libdirectcoll under LD_PRELOAD, or not) against the PMPI_ call (the MPI library itself) on every
 * predefined basic datatype x every predefined reduction MPI defines on it (allgather: copies) x the counts given x
 * in place and not; integers bitwise, floating point within reassociation tolerance; elements past the result
 * must stay untouched.
 *
 *   collective_check COLLECTIVE all|quick COUNT...   the matrix (quick: int, double, float, uint8 only); COUNT is
 *                                                    the vector (allreduce) or one rank's block (the others)
 *   collective_check COLLECTIVE comms COUNT...       MPI_COMM_WORLD, a duplicate and two halves (even ranks)
 *                                                    interleaved, an intercommunicator (falls through), frees
 *   collective_check allreduce fallthrough COUNT     a user-defined op (MPI_Allreduce on MPI_INT and on a derived
 *                                                    datatype, MPI_Reduce_scatter_block), MPI_CHAR, an allgather
 *                                                    received as a derived datatype
 *   collective_check COLLECTIVE progress BYTES       rank 0 sends BYTES to rank 1 (MPI_Isend) and calls the
 *                                                    collective while rank 1 waits in MPI_Recv for them: the
 *                                                    collective must drive rank 0's MPI progress meanwhile
 *
 *   collective_check allreduce loop SECONDS COUNT [return]   MPI_Allreduce of COUNT doubles over and over for
 *                                                    SECONDS, each rank printing "rank R pid P looping" after its
 *                                                    first call (the fault tests kill a rank meanwhile); "return":
 *                                                    MPI_ERRORS_RETURN on MPI_COMM_WORLD, and a call that returns
 *                                                    an error prints it and exits with status 3
 *
 *   collective_check bcast:R|reduce:R fallthrough COUNT  another root than R, a user-defined op, a derived
 *                                                    datatype, an intercommunicator
 *
 * COLLECTIVE: allreduce, reduce_scatter_block, allgather or alltoall (COUNT: per destination; copies, like
 * allgather, once per datatype), bcast:R or reduce:R (MPI_Bcast, MPI_Reduce with root R, modulo the communicator's
 * size; a broadcast once per datatype, one buffer; a reduce in place at the root with recvbuf NULL elsewhere, and
 * not in place with a recvbuf off the root that must stay untouched). Prints "checked N cases, F failures" on rank
 * 0; exit status 1 on any failure.
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K_INT, K_FLOAT, K_COMPLEX, K_BOOL, K_BYTE };
enum { G_INT = 1, G_FLOAT = 2, G_COMPLEX = 4, G_LOGICAL = 8, G_BYTE = 16, G_MULTI = 32 };
#define GUARD 4

typedef struct {
    MPI_Datatype type;
    const char *name;
    int kind, group;
    double tol;
    int uns;         /* an unsigned integer (MPI_MAX and MPI_MIN compare without sign) */
} tinfo;

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unit(uint64_t *s) { return (double)(rng(s) >> 11) / 9007199254740992.0; }

static void fill(const tinfo *t, int size, MPI_Op op, char *buf, int count, uint64_t seed) {
    uint64_t s = seed;
    int logical = op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
    for (int i = 0; i < count; i++) {
        char *p = buf + (size_t)i * (size_t)size;
        double v = op == MPI_PROD ? 0.9 + 0.2 * unit(&s) : 2.0 * unit(&s) - 1.0;
        switch (t->kind) {
        case K_INT:
        case K_BYTE:
            if (logical) {
                memset(p, 0, (size_t)size);
                p[0] = (char)(rng(&s) % 3);  /* 0, 1 or 2: non-zero other than 1 counts as true */
            } else {
                for (int b = 0; b < size; b++) p[b] = (char)rng(&s);
            }
            break;
        case K_BOOL:
            *(bool *)p = rng(&s) & 1;
            break;
        case K_FLOAT:
            if (size == sizeof(float)) *(float *)p = (float)v;
            else if (size == sizeof(double)) *(double *)p = v;
            else {
                memset(p, 0, (size_t)size);
                *(long double *)p = v;
            }
            break;
        case K_COMPLEX: {
            double w = op == MPI_PROD ? 0.1 * unit(&s) : 2.0 * unit(&s) - 1.0;
            if (size == sizeof(float complex)) *(float complex *)p = (float)v + (float)w * I;
            else if (size == sizeof(double complex)) *(double complex *)p = v + w * I;
            else {
                memset(p, 0, (size_t)size);
                *(long double complex *)p = v + w * I;
            }
            break;
        }
        }
    }
}

static long double part(const tinfo *t, int size, const char *p, int imag) {
    if (t->kind == K_FLOAT) {
        if (size == sizeof(float)) return *(const float *)p;
        if (size == sizeof(double)) return *(const double *)p;
        return *(const long double *)p;
    }
    if (size == sizeof(float complex)) return imag ? cimagf(*(const float complex *)p) : crealf(*(const float complex *)p);
    if (size == sizeof(double complex)) return imag ? cimag(*(const double complex *)p) : creal(*(const double complex *)p);
    return imag ? cimagl(*(const long double complex *)p) : creall(*(const long double complex *)p);
}

/* index of the first element that differs, or -1 */
static long differs(const tinfo *t, int size, const char *got, const char *want, int count) {
    for (int i = 0; i < count; i++) {
        const char *a = got + (size_t)i * (size_t)size, *b = want + (size_t)i * (size_t)size;
        if (t->kind == K_FLOAT || t->kind == K_COMPLEX) {
            for (int im = 0; im < (t->kind == K_COMPLEX ? 2 : 1); im++) {
                long double x = part(t, size, a, im), y = part(t, size, b, im);
                if (!(fabsl(x - y) <= t->tol * (1.0L + fabsl(y)))) return i;
            }
        } else if (t->kind == K_BOOL) {
            if (*(const bool *)a != *(const bool *)b) return i;
        } else if (memcmp(a, b, (size_t)size) != 0) {
            return i;
        }
    }
    return -1;
}

/* acc[i] = acc[i] op in[i] for i < count, by MPI's definition of op (MPI 4.1 Sec. 6.9.2): the checker's own
 * reference for reductions. Integer sums and products wrap; logical ops give 0 or 1. */
static void define_op(const tinfo *t, int size, MPI_Op op, char *acc, const char *in, int count) {
    for (int i = 0; i < count; i++) {
        char *a = acc + (size_t)i * (size_t)size;
        const char *b = in + (size_t)i * (size_t)size;
        if (t->kind == K_INT || t->kind == K_BYTE) {
            uint64_t x = 0, y = 0, r = 0;
            memcpy(&x, a, (size_t)size);  /* little-endian: the low bytes */
            memcpy(&y, b, (size_t)size);
            const int bits = 8 * size;
            const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1, sign = 1ull << (bits - 1);
            const int64_t sx = (int64_t)(x & sign ? x | ~mask : x), sy = (int64_t)(y & sign ? y | ~mask : y);
            const int gt = t->uns ? x > y : sx > sy;
            if (op == MPI_SUM) r = x + y;
            else if (op == MPI_PROD) r = x * y;
            else if (op == MPI_MAX) r = gt ? x : y;
            else if (op == MPI_MIN) r = gt ? y : x;
            else if (op == MPI_LAND) r = x && y;
            else if (op == MPI_LOR) r = x || y;
            else if (op == MPI_LXOR) r = !x != !y;
            else if (op == MPI_BAND) r = x & y;
            else if (op == MPI_BOR) r = x | y;
            else r = x ^ y;
            r &= mask;
            memcpy(a, &r, (size_t)size);
        } else if (t->kind == K_BOOL) {
            bool x = *(bool *)a, y = *(const bool *)b;
            *(bool *)a = op == MPI_LAND ? x && y : op == MPI_LOR ? x || y : x != y;
        } else if (t->kind == K_FLOAT) {
#define FLOAT_OP(T)                                                                                                  \
    {                                                                                                                \
        T x, y;                                                                                                      \
        memcpy(&x, a, sizeof x);                                                                                     \
        memcpy(&y, b, sizeof y);                                                                                     \
        T r = op == MPI_SUM ? x + y : op == MPI_PROD ? x * y : op == MPI_MAX ? (x > y ? x : y) : (x > y ? y : x);  \
        memcpy(a, &r, sizeof r);                                                                                     \
    }
            if (size == sizeof(float)) FLOAT_OP(float)
            else if (size == sizeof(double)) FLOAT_OP(double)
            else FLOAT_OP(long double)
#undef FLOAT_OP
        } else {
#define COMPLEX_OP(T)                                                                                                \
    {                                                                                                                \
        T x, y;                                                                                                      \
        memcpy(&x, a, sizeof x);                                                                                     \
        memcpy(&y, b, sizeof y);                                                                                     \
        T r = op == MPI_SUM ? x + y : x * y;                                                                         \
        memcpy(a, &r, sizeof r);                                                                                     \
    }
            if (size == sizeof(float complex)) COMPLEX_OP(float complex)
            else if (size == sizeof(double complex)) COMPLEX_OP(double complex)
            else COMPLEX_OP(long double complex)
#undef COMPLEX_OP
        }
    }
}

enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_ALLTOALL, C_BCAST, C_REDUCE };
static int the_root;  /* MPI_Bcast and MPI_Reduce: the root (modulo the communicator's size) */

static int check(int coll, const tinfo *t, MPI_Op op, const char *opname, int count, int in_place, MPI_Comm comm) {
    int size = 0, rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    MPI_Type_size(t->type, &size);
    const int rooted = coll == C_BCAST || coll == C_REDUCE, root = the_root % nranks;
    const size_t z = (size_t)size, n = (size_t)count, total = coll == C_ALLREDUCE || rooted ? n : n * (size_t)nranks;
    const size_t nsend = coll == C_ALLGATHER ? n : total;  /* elements each rank contributes */
    /* elements of the result; a reduce's recvbuf off the root must stay untouched (it may be NULL: in place) */
    const size_t nresult = coll == C_REDUCE_SCATTER ? n : coll == C_REDUCE && rank != root ? 0 : total;
    const size_t nrecv = in_place ? total : nresult;      /* elements of recvbuf */
    size_t bytes = (total + GUARD) * z;
    char *send = malloc(bytes), *got = malloc(bytes), *want = malloc(bytes), *ref = malloc(bytes);
#define SEED(r) (1000003ull * (uint64_t)((r) + 1) + (uint64_t)count * 7919u + (uint64_t)size)
    uint64_t seed = SEED(rank);
    memset(send, 0, bytes);
    fill(t, size, op, send, (int)nsend, seed);
    memset(got, 0xA5, bytes);
    memset(want, 0x5A, bytes);
    if (in_place && coll == C_ALLGATHER) memcpy(got + (size_t)rank * n * z, send, n * z);
    else if (in_place) memcpy(got, send, total * z);
    memcpy(ref, got, bytes);
    const void *sb = in_place ? MPI_IN_PLACE : send;
    int rc;
    if (coll == C_ALLREDUCE) {
        rc = MPI_Allreduce(sb, got, count, t->type, op, comm);
        PMPI_Allreduce(send, want, count, t->type, op, comm);
    } else if (coll == C_REDUCE_SCATTER) {
        rc = MPI_Reduce_scatter_block(sb, got, count, t->type, op, comm);
        PMPI_Reduce_scatter_block(send, want, count, t->type, op, comm);
    } else if (coll == C_ALLGATHER) {
        rc = MPI_Allgather(sb, count, t->type, got, count, t->type, comm);
        PMPI_Allgather(send, count, t->type, want, count, t->type, comm);
    } else if (coll == C_ALLTOALL) {
        rc = MPI_Alltoall(sb, count, t->type, got, count, t->type, comm);
        PMPI_Alltoall(send, count, t->type, want, count, t->type, comm);
    } else if (coll == C_BCAST) {  /* one buffer: the root's holds the input */
        if (rank == root) {
            memcpy(got, send, n * z);
            memcpy(want, send, n * z);
            memcpy(ref, got, bytes);
        }
        rc = MPI_Bcast(got, count, t->type, root, comm);
        PMPI_Bcast(want, count, t->type, root, comm);
    } else {  /* MPI_IN_PLACE at the root only; off the root recvbuf is NULL in place, else must not change */
        rc = MPI_Reduce(in_place && rank != root ? send : sb, rank == root || !in_place ? got : NULL, count, t->type,
                        op, root, comm);
        PMPI_Reduce(send, want, count, t->type, op, root, comm);
    }
    const int reduces = coll == C_ALLREDUCE || coll == C_REDUCE_SCATTER || coll == C_REDUCE;
    if (reduces && nresult > 0) {
        /* the reference of a reduction is MPI's definition, computed here from every rank's input (each rank's seed
         * is known), since some MPI libraries get a few cases wrong (Open MPI 4.1.4: MPI_MAX / MPI_MIN of
         * MPI_UNSIGNED_LONG and MPI_OFFSET, ompi#10525; 8- and 16-bit sums of its AVX op component saturate,
         * ompi#8045): where the MPI library's own result (want) differs from it, a note says so; a result equal to
         * the MPI library's bit for bit is right too (a call that fell through got exactly that) */
        char *def = malloc(bytes), *in = malloc(bytes);
        memset(def, 0, bytes);
        memset(in, 0, bytes);
        for (int r = 0; r < nranks; r++) {
            fill(t, size, op, r ? in : def, (int)nsend, SEED(r));
            if (r) define_op(t, size, op, def, in, (int)nsend);
        }
        const char *mine = def + (coll == C_REDUCE_SCATTER ? (size_t)rank * n * z : 0);
        static const void *noted[64][2];  /* (type, op name) pairs noted already: one note each */
        static int nnoted;
        long off = differs(t, size, want, mine, (int)nresult);
        int seen = 0;
        for (int k = 0; k < nnoted; k++) seen |= noted[k][0] == t && noted[k][1] == opname;
        if (off >= 0 && !seen && nnoted < 64) {
            noted[nnoted][0] = t;
            noted[nnoted++][1] = opname;
            fprintf(stderr, "note: rank %d: the MPI library's own %s of %s %s differs from MPI's definition at element "
                    "%ld (checked against the definition)\n", rank, coll == C_REDUCE ? "reduce" : coll == C_ALLREDUCE ?
                    "allreduce" : "reduce-scatter", t->name, opname, off);
        }
        /* right: the definition, or bitwise the MPI library's own result (a call that fell through to it) */
        if (rc == MPI_SUCCESS && differs(t, size, got, mine, (int)nresult) >= 0 &&
            memcmp(got, want, nresult * z) != 0)
            memcpy(want, mine, nresult * z);
        else
            memcpy(want, got, nresult * z);
        free(def);
        free(in);
    }
#undef SEED
    long bad = rc != MPI_SUCCESS ? 0 : differs(t, size, got, want, (int)nresult);
    if (bad < 0 && coll == C_REDUCE && rank != root && memcmp(got, ref, bytes) != 0) bad = 0;
    int guard = memcmp(got + nrecv * z, ref + nrecv * z, (size_t)GUARD * z) != 0;
    if (bad >= 0 || guard)
        fprintf(stderr, "FAIL rank %d/%d: %s %s count=%d in_place=%d: %s%ld\n", rank, nranks, t->name, opname, count,
                in_place, guard ? "wrote past the buffer; " : rc != MPI_SUCCESS ? "error code; " : "element ", bad);
    free(send);
    free(got);
    free(want);
    free(ref);
    return bad >= 0 || guard;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    int n = *len * (*type == MPI_INT ? 1 : 2);  /* MPI_INT or pairs of them */
    for (int i = 0; i < n; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* What MPI_Bcast and MPI_Reduce leave to the MPI library: another root than the program's, a user-defined op, a
 * derived datatype, an intercommunicator. The number of wrong elements on this rank. */
static int rooted_fallthrough(int coll, int count) {
    int rank, nranks, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const int other = (the_root + 1) % nranks;
    MPI_Op mine;
    MPI_Op_create(user_sum, 1, &mine);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int *a = calloc((size_t)(2 * count + 1), sizeof *a), *b = calloc((size_t)(2 * count + 1), sizeof *b);
    const int sum = nranks * (nranks - 1) / 2;
    for (int i = 0; i < 2 * count; i++) a[i] = rank + i;
    if (coll == C_BCAST) {
        MPI_Bcast(a, count, MPI_INT, other, MPI_COMM_WORLD);  /* a root no program is compiled for */
        for (int i = 0; i < count; i++) failures += a[i] != other + i;
        for (int i = 0; i < 2 * count; i++) a[i] = rank + i;
        MPI_Bcast(a, count, pair, the_root, MPI_COMM_WORLD);  /* a derived datatype */
        for (int i = 0; i < 2 * count; i++) failures += a[i] != the_root + i;
    } else {
        MPI_Reduce(a, b, count, MPI_INT, MPI_SUM, other, MPI_COMM_WORLD);  /* another root */
        for (int i = 0; rank == other && i < count; i++) failures += b[i] != nranks * i + sum;
        MPI_Reduce(a, b, count, MPI_INT, mine, the_root, MPI_COMM_WORLD);  /* a user-defined op */
        for (int i = 0; rank == the_root && i < count; i++) failures += b[i] != nranks * i + sum;
        MPI_Reduce(a, b, count, pair, mine, the_root, MPI_COMM_WORLD);  /* a derived datatype */
        for (int i = 0; rank == the_root && i < 2 * count; i++) failures += b[i] != nranks * i + sum;
    }
    if (nranks >= 2) {  /* an intercommunicator: even ranks (group A, root: its rank 0) and odd ranks */
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
        int r = rank % 2 ? 0 : rank == 0 ? MPI_ROOT : MPI_PROC_NULL, x[2] = {rank + 5, rank + 6}, y[2] = {0, 0};
        if (coll == C_BCAST) {
            MPI_Bcast(x, 2, MPI_INT, r, inter);
            failures += rank % 2 && (x[0] != 5 || x[1] != 6);
        } else {
            MPI_Reduce(x, y, 2, MPI_INT, MPI_SUM, r, inter);  /* the odd ranks' sum, at world rank 0 */
            int odd = 0;
            for (int k = 1; k < nranks; k += 2) odd += k + 5;
            failures += rank == 0 && y[0] != odd;
        }
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Op_free(&mine);
    MPI_Type_free(&pair);
    free(a);
    free(b);
    return failures;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *collective = argc > 1 ? argv[1] : "allreduce";
    const char *mode = argc > 2 ? argv[2] : "quick";
    int coll = strcmp(collective, "reduce_scatter_block") == 0 ? C_REDUCE_SCATTER
               : strcmp(collective, "allgather") == 0      ? C_ALLGATHER
               : strcmp(collective, "alltoall") == 0       ? C_ALLTOALL
               : strncmp(collective, "bcast", 5) == 0      ? C_BCAST
               : strncmp(collective, "reduce:", 7) == 0 || strcmp(collective, "reduce") == 0 ? C_REDUCE
                                                           : C_ALLREDUCE;
    if (strchr(collective, ':')) the_root = atoi(strchr(collective, ':') + 1);
    const int copies = coll == C_ALLGATHER || coll == C_ALLTOALL || coll == C_BCAST;  /* no op: each datatype once */
    const int places = coll == C_BCAST ? 1 : 2;  /* MPI_Bcast has one buffer */
    const tinfo types[] = {
        {MPI_INT, "MPI_INT", K_INT, G_INT, 0, 0}, {MPI_DOUBLE, "MPI_DOUBLE", K_FLOAT, G_FLOAT, 1e-12, 0},
        {MPI_FLOAT, "MPI_FLOAT", K_FLOAT, G_FLOAT, 1e-5, 0}, {MPI_UINT8_T, "MPI_UINT8_T", K_INT, G_INT, 0, 1},
        {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", K_INT, G_INT, 0, 0},
        {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", K_INT, G_INT, 0, 1}, {MPI_SHORT, "MPI_SHORT", K_INT, G_INT, 0, 0},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", K_INT, G_INT, 0, 1}, {MPI_UNSIGNED, "MPI_UNSIGNED", K_INT, G_INT, 0, 1},
        {MPI_LONG, "MPI_LONG", K_INT, G_INT, 0, 0}, {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", K_INT, G_INT, 0, 1},
        {MPI_LONG_LONG, "MPI_LONG_LONG", K_INT, G_INT, 0, 0},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", K_INT, G_INT, 0, 1},
        {MPI_INT8_T, "MPI_INT8_T", K_INT, G_INT, 0, 0}, {MPI_INT16_T, "MPI_INT16_T", K_INT, G_INT, 0, 0},
        {MPI_INT32_T, "MPI_INT32_T", K_INT, G_INT, 0, 0}, {MPI_INT64_T, "MPI_INT64_T", K_INT, G_INT, 0, 0},
        {MPI_UINT16_T, "MPI_UINT16_T", K_INT, G_INT, 0, 1}, {MPI_UINT32_T, "MPI_UINT32_T", K_INT, G_INT, 0, 1},
        {MPI_UINT64_T, "MPI_UINT64_T", K_INT, G_INT, 0, 1},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", K_FLOAT, G_FLOAT, 1e-12, 0},
        {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", K_COMPLEX, G_COMPLEX, 1e-5, 0},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", K_COMPLEX, G_COMPLEX, 1e-12, 0},
        {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", K_COMPLEX, G_COMPLEX, 1e-12, 0},
        {MPI_C_BOOL, "MPI_C_BOOL", K_BOOL, G_LOGICAL, 0, 0}, {MPI_BYTE, "MPI_BYTE", K_BYTE, G_BYTE, 0, 0},
        {MPI_AINT, "MPI_AINT", K_INT, G_MULTI, 0, 0}, {MPI_OFFSET, "MPI_OFFSET", K_INT, G_MULTI, 0, 0},
        {MPI_COUNT, "MPI_COUNT", K_INT, G_MULTI, 0, 0},
    };
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    const char *opnames[] = {"MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN", "MPI_LAND", "MPI_LOR", "MPI_LXOR",
                             "MPI_BAND", "MPI_BOR", "MPI_BXOR"};
    const int opgroups[] = {G_INT | G_FLOAT | G_COMPLEX | G_MULTI, G_INT | G_FLOAT | G_COMPLEX | G_MULTI,
                            G_INT | G_FLOAT | G_MULTI, G_INT | G_FLOAT | G_MULTI, G_INT | G_LOGICAL,
                            G_INT | G_LOGICAL, G_INT | G_LOGICAL, G_INT | G_BYTE | G_MULTI,
                            G_INT | G_BYTE | G_MULTI, G_INT | G_BYTE | G_MULTI};
    int cases = 0, failures = 0;
    if (strcmp(mode, "fallthrough") == 0 && (coll == C_BCAST || coll == C_REDUCE)) {
        failures = rooted_fallthrough(coll, argc > 3 ? atoi(argv[3]) : 10);
        cases = 5;
    } else if (strcmp(mode, "fallthrough") == 0) {
        int count = argc > 3 ? atoi(argv[3]) : 10;
        MPI_Op mine;
        MPI_Op_create(user_sum, 1, &mine);
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        size_t room = (size_t)count * 2 * (size_t)nranks + 1;
        int *a = calloc(room, sizeof *a), *b = calloc(room, sizeof *b);
        for (int i = 0; i < 2 * count * nranks; i++) a[i] = rank + i;
        MPI_Allreduce(a, b, count, MPI_INT, mine, MPI_COMM_WORLD);  /* a user-defined op */
        for (int i = 0; i < count; i++) failures += b[i] != nranks * i + nranks * (nranks - 1) / 2;
        MPI_Allreduce(a, b, count, pair, mine, MPI_COMM_WORLD);  /* a derived datatype */
        for (int i = 0; i < 2 * count; i++) failures += b[i] != nranks * i + nranks * (nranks - 1) / 2;
        char c[64], d[64];  /* MPI_CHAR: MPI defines no reduction on it (MPICH's MPI_MAX does) */
        for (int i = 0; i < 64; i++) c[i] = (char)(rank * 3 + i);
        MPI_Allreduce(c, d, 64, MPI_CHAR, MPI_MAX, MPI_COMM_WORLD);
        for (int i = 0; i < 64; i++) failures += d[i] != (char)((nranks - 1) * 3 + i);
        MPI_Reduce_scatter_block(a, b, count, MPI_INT, mine, MPI_COMM_WORLD);  /* a user-defined op */
        for (int i = 0; i < count; i++) failures += b[i] != nranks * (rank * count + i) + nranks * (nranks - 1) / 2;
        MPI_Allgather(a, 2, MPI_INT, b, 1, pair, MPI_COMM_WORLD);  /* received as a derived datatype */
        for (int r = 0; r < nranks; r++) failures += b[2 * r] != r || b[2 * r + 1] != r + 1;
        MPI_Alltoall(a, 2, MPI_INT, b, 1, pair, MPI_COMM_WORLD);  /* received as a derived datatype */
        for (int r = 0; r < nranks; r++) failures += b[2 * r] != r + 2 * rank || b[2 * r + 1] != r + 2 * rank + 1;
        cases = 6;
        MPI_Op_free(&mine);
        MPI_Type_free(&pair);
        free(a);
        free(b);
    } else if (strcmp(mode, "loop") == 0) {
        const double seconds = argc > 3 ? atof(argv[3]) : 30;
        const int n = argc > 4 ? atoi(argv[4]) : 1 << 17;
        if (argc > 5 && strcmp(argv[5], "return") == 0) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        double *x = calloc((size_t)n + 1, sizeof *x), *y = calloc((size_t)n + 1, sizeof *y);
        for (int i = 0; i < n; i++) x[i] = rank + i;
        const double start = MPI_Wtime();
        for (long it = 0; MPI_Wtime() - start < seconds; it++, cases++) {
            int rc = MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) {
                char text[MPI_MAX_ERROR_STRING];
                int len = 0;
                MPI_Error_string(rc, text, &len);
                fprintf(stderr, "rank %d: MPI_Allreduce returned error %d: %.*s\n", rank, rc, len, text);
                exit(3);
            }
            failures += y[n - 1] != (double)nranks * (n - 1) + nranks * (nranks - 1) / 2.0;
            if (it == 0) {
                fprintf(stderr, "rank %d pid %ld looping\n", rank, (long)getpid());
                fflush(stderr);
            }
        }
        free(x);
        free(y);
    } else if (strcmp(mode, "progress") == 0) {
        const int n = argc > 3 ? atoi(argv[3]) : 1 << 22;
        char *big = calloc((size_t)n + 1, 1);
        for (int it = 0; it < 3; it++, cases++) {
            MPI_Request req = MPI_REQUEST_NULL;
            for (int i = 0; rank == 0 && i < n; i++) big[i] = (char)(i + it);
            if (rank == 0) MPI_Isend(big, n, MPI_CHAR, 1, it, MPI_COMM_WORLD, &req);
            else if (rank == 1) MPI_Recv(big, n, MPI_CHAR, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            failures += check(coll, &types[0], MPI_SUM, "MPI_SUM", 7, 0, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; rank == 1 && i < n; i++) failures += big[i] != (char)(i + it);
        }
        free(big);
    } else if (strcmp(mode, "comms") == 0) {  /* several communicators at once, freed in between; even ranks */
        MPI_Comm dup, half, inter;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        for (int a = 3; a < argc; a++) {
            MPI_Comm comms[5] = {MPI_COMM_WORLD, half, dup, half, MPI_COMM_WORLD};
            for (int c = 0; c < 5; c++, cases += 2)
                for (int in_place = 0; in_place < 2; in_place++)
                    failures += check(coll, &types[1], MPI_SUM, "MPI_SUM", atoi(argv[a]), in_place, comms[c]);
        }
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
        int x = rank + 1, y = 0, z = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter);  /* an intercommunicator: falls through */
        PMPI_Allreduce(&x, &z, 1, MPI_INT, MPI_SUM, inter);
        failures += y != z;
        cases++;
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);  /* frees its state (plans, private duplicate) */
        for (int a = 3; a < argc; a++, cases += 2)
            for (int in_place = 0; in_place < 2; in_place++)
                failures += check(coll, &types[0], MPI_BXOR, "MPI_BXOR", atoi(argv[a]), in_place, dup);
        MPI_Comm_free(&dup);
    } else {
        size_t ntypes = strcmp(mode, "all") == 0 ? sizeof types / sizeof types[0] : 4;
        for (size_t ti = 0; ti < ntypes; ti++) {
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
                if (copies ? k > 0 : !(opgroups[k] & types[ti].group)) continue;  /* copies: once */
                for (int a = 3; a < argc; a++) {
                    for (int in_place = 0; in_place < places; in_place++) {
                        failures += check(coll, &types[ti], ops[k], copies ? "copy" : opnames[k],
                                          atoi(argv[a]), in_place, MPI_COMM_WORLD);
                        cases++;
                    }
                }
            }
        }
    }
    int total = 0;
    PMPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("checked %d cases, %d failures\n", cases, total);
    MPI_Finalize();
    return total != 0;
}
