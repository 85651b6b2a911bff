/* dc_smpi_driver: the program `directcoll run --engine smpi` runs inside SimGrid SMPI (docs/runtime.md, "The SMPI
 * engine"). It is built with smpicc together with libdirectcoll's sources into one SMPI program, so that its
 * MPI_ calls go to libdirectcoll (interposed through the profiling interface, as LD_PRELOAD does on a real MPI) and
 * its PMPI_ calls to SMPI's own collectives.
 *
 *   smpirun ... dc_smpi_driver COLLECTIVE REPEAT BYTES...
 *
 * COLLECTIVE: allreduce, reduce_scatter, allgather or alltoall. Per size (BYTES: the whole vector, or for all-to-all
 * one rank's send buffer, as `directcoll run` takes them) the vector is count = max(N, floor(BYTES / 8 / N) N)
 * MPI_DOUBLEs; reduce-scatter and allgather move count / N per rank, all-to-all count / N per destination. The
 * values are small integers, so every sum is exact and the two results must agree bitwise. Per size: one warm-up of
 * each (the first served call duplicates the communicator and checks the programs), then REPEAT timed calls of the
 * MPI library's collective (PMPI_) and of ours (MPI_). Every timed call starts on all ranks at the same simulated
 * instant (common_start) and its time is the last rank's end minus that instant (MPI_Wtime: SimGrid's simulated
 * clock), averaged over the repetitions.
 *
 * Output (rank 0, stdout): one line per size,
 *   result BYTES_RUN NATIVE_SECONDS OURS_SECONDS CORRECT LATE
 * CORRECT is 1 when every rank's result equals the MPI library's bit for bit; LATE is 1 when some rank reached a
 * common start after it (the margin was too short; the times then include that rank's delay).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL };

static int call(int coll, const double *a, double *b, long count, int n, int ours) {
    const int m = (int)(coll == ALLREDUCE ? count : count / n);
    switch (coll) {
    case ALLREDUCE:
        return ours ? MPI_Allreduce(a, b, m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                    : PMPI_Allreduce(a, b, m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case REDUCE_SCATTER:
        return ours ? MPI_Reduce_scatter_block(a, b, m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                    : PMPI_Reduce_scatter_block(a, b, m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case ALLGATHER:
        return ours ? MPI_Allgather(a, m, MPI_DOUBLE, b, m, MPI_DOUBLE, MPI_COMM_WORLD)
                    : PMPI_Allgather(a, m, MPI_DOUBLE, b, m, MPI_DOUBLE, MPI_COMM_WORLD);
    default:
        return ours ? MPI_Alltoall(a, m, MPI_DOUBLE, b, m, MPI_DOUBLE, MPI_COMM_WORLD)
                    : PMPI_Alltoall(a, m, MPI_DOUBLE, b, m, MPI_DOUBLE, MPI_COMM_WORLD);
    }
}

/* Start every rank at the same simulated instant: agree on the latest clock (MPI_Wtime is SimGrid's global
 * simulated clock) and sleep (simulated, nanosecond resolution) until it plus a margin longer than the agreement
 * itself took, so that the collective starts on all ranks together, as in the models. Returns that instant. */
static double common_start(double margin) {
    double now = MPI_Wtime(), latest = 0;
    PMPI_Allreduce(&now, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double start = latest + margin, wait = start - MPI_Wtime();
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return start;
}

/* the mean over repeat calls of the simulated seconds from the common start to the last rank's end */
static double timed(int coll, const double *a, double *b, long count, int n, int ours, int repeat, double margin,
                    int *late) {
    double total = 0;
    for (int i = 0; i < repeat; i++) {
        double start = common_start(margin);
        if (MPI_Wtime() > start + 1e-9) *late = 1;
        call(coll, a, b, count, n, ours);
        double end = MPI_Wtime(), last = 0;
        PMPI_Allreduce(&end, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        total += last - start;
    }
    return total / repeat;
}

/* exported: the library is built with -fvisibility=hidden, and SMPI finds main in the program it loads */
__attribute__((visibility("default"))) int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, n = 1, coll = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *names[] = {"allreduce", "reduce_scatter", "allgather", "alltoall"};
    for (int c = 0; argc > 1 && c < 4; c++)
        if (strcmp(argv[1], names[c]) == 0) coll = c;
    int repeat = argc > 2 ? atoi(argv[2]) : 0;
    if (argc < 4 || coll < 0 || repeat < 1) {
        if (rank == 0) fprintf(stderr, "usage: dc_smpi_driver allreduce|reduce_scatter|allgather|alltoall REPEAT BYTES...\n");
        MPI_Finalize();
        return 2;
    }
    /* the margin of common_start: ten times the longest agreement (an 8-byte allreduce) seen, plus 1 us */
    double t0 = MPI_Wtime(), x = t0, y = 0, took = 0;
    PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    x = MPI_Wtime() - t0;
    PMPI_Allreduce(&x, &took, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double margin = 10 * took + 1e-6;
    for (int s = 3; s < argc; s++) {
        long bytes = atol(argv[s]);
        long count = bytes / 8 / n * n;
        if (count < n) count = n;
        long in_len = coll == ALLGATHER ? count / n : count;
        long out_len = coll == REDUCE_SCATTER ? count / n : count;
        double *a = malloc((size_t)in_len * sizeof *a), *ours = calloc((size_t)out_len, sizeof *ours),
               *mpi = calloc((size_t)out_len, sizeof *mpi);
        if (!a || !ours || !mpi) {
            fprintf(stderr, "dc_smpi_driver: rank %d: out of memory for %ld doubles\n", rank, count);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        for (long i = 0; i < in_len; i++) a[i] = (double)((rank * 7 + i * 3) % 17);
        call(coll, a, mpi, count, n, 0);   /* warm-ups */
        call(coll, a, ours, count, n, 1);
        int same = memcmp(ours, mpi, (size_t)out_len * sizeof *ours) == 0, all = 0;
        PMPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        int late = 0, any_late = 0;
        double t_mpi = timed(coll, a, mpi, count, n, 0, repeat, margin, &late);
        double t_ours = timed(coll, a, ours, count, n, 1, repeat, margin, &late);
        PMPI_Allreduce(&late, &any_late, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0) printf("result %ld %.12e %.12e %d %d\n", count * 8, t_mpi, t_ours, all, any_late);
        fflush(stdout);
        free(a);
        free(ours);
        free(mpi);
    }
    MPI_Finalize();
    return 0;
}
