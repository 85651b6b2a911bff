/* Time MPI_Allreduce (served by libdirectcoll under LD_PRELOAD) against PMPI_Allreduce (the MPI library) in the
 * same run, on MPI_DOUBLE / MPI_SUM, not in place.
 *
 *   allreduce_bench BYTES...
 *
 * Per size, 5 rounds alternate the two; a round times enough calls for about 0.2 s and takes the slowest rank's
 * mean per call; the table shows the best round of each, in microseconds.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

static double round_time(allreduce_fn fn, double *a, double *b, int count, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) fn(a, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("%12s %14s %14s %8s\n", "bytes", "MPI (us)", "directcoll (us)", "ratio");
    for (int k = 1; k < argc; k++) {
        long bytes = atol(argv[k]);
        int count = (int)(bytes / 8 > 0 ? bytes / 8 : 1);
        double *a = malloc((size_t)count * 8), *b = malloc((size_t)count * 8);
        for (int i = 0; i < count; i++) a[i] = rank + i * 1e-3;
        double probe = round_time(PMPI_Allreduce, a, b, count, 3);
        int iters = probe > 0 ? (int)(0.2 / probe) : 1000;
        iters = iters < 3 ? 3 : iters > 20000 ? 20000 : iters;
        PMPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
        round_time(MPI_Allreduce, a, b, count, 3);  /* builds and caches the plan */
        double best_mpi = 1e30, best_ours = 1e30;
        for (int r = 0; r < 5; r++) {
            double m = round_time(PMPI_Allreduce, a, b, count, iters), o = round_time(MPI_Allreduce, a, b, count, iters);
            best_mpi = m < best_mpi ? m : best_mpi;
            best_ours = o < best_ours ? o : best_ours;
        }
        if (rank == 0)
            printf("%12ld %14.2f %14.2f %8.2f\n", (long)count * 8, best_mpi * 1e6, best_ours * 1e6, best_ours / best_mpi);
        free(a);
        free(b);
    }
    MPI_Finalize();
    return 0;
}
