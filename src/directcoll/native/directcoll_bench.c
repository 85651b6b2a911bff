/* directcoll_bench: an OSU-style latency test of MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,
 * MPI_Alltoall, MPI_Bcast or MPI_Reduce on
 * MPI_DOUBLE (MPI_SUM), not in place, timing the MPI library's own collective (the PMPI_ call) and the MPI_ call
 * (served by libdirectcoll under LD_PRELOAD with a tuning table; the MPI library again without one) in the same run
 * (docs/runtime.md, "Benchmarks and tuning"; `directcoll bench`, `directcoll tune --measure`).
 *
 *   directcoll_bench COLLECTIVE IMPL ROUND_SECONDS BYTES...
 *
 * COLLECTIVE: allreduce, reduce_scatter, allgather, alltoall, broadcast[:ROOT] or reduce[:ROOT] (root 0 unless
 * given). IMPL: native (the PMPI_ call only), ours (the MPI_
 * call only) or both (alternating, round by round). BYTES as OSU prints them: the vector for allreduce and
 * reduce_scatter (rounded down to a multiple of 8 x the ranks, at least one element per rank) and for broadcast and
 * reduce, one rank's block for allgather,
 * one destination's block for alltoall.
 * Per size: a probe sets the iterations of a round (about ROUND_SECONDS), then 5 rounds of each; a round is the
 * slowest rank's mean per call, and the row shows the best round, in microseconds.
 *
 * Output: the OSU micro-benchmarks' format (`directcoll calibrate FILE SPEC --format osu --ranks N` reads it):
 *   # OSU MPI Allreduce Latency Test (directcoll bench, native)
 *   # Size       Avg Latency(us)
 *   8                      0.25
 * With both, "Avg Latency(us)" is the MPI library's and a second column "directcoll(us)" is ours.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL, BCAST, REDUCE };

typedef struct {
    int coll, size, rank, root;
    long count;          /* allreduce: the vector; reduce_scatter and allgather: one rank's block */
    double *a, *b;
} bench;

static int call(const bench *k, int ours) {
    const int n = (int)k->count;
    switch (k->coll) {
    case ALLREDUCE:
        return ours ? MPI_Allreduce(k->a, k->b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                    : PMPI_Allreduce(k->a, k->b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case REDUCE_SCATTER:
        return ours ? MPI_Reduce_scatter_block(k->a, k->b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
                    : PMPI_Reduce_scatter_block(k->a, k->b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case ALLGATHER:
        return ours ? MPI_Allgather(k->a, n, MPI_DOUBLE, k->b, n, MPI_DOUBLE, MPI_COMM_WORLD)
                    : PMPI_Allgather(k->a, n, MPI_DOUBLE, k->b, n, MPI_DOUBLE, MPI_COMM_WORLD);
    case ALLTOALL:
        return ours ? MPI_Alltoall(k->a, n, MPI_DOUBLE, k->b, n, MPI_DOUBLE, MPI_COMM_WORLD)
                    : PMPI_Alltoall(k->a, n, MPI_DOUBLE, k->b, n, MPI_DOUBLE, MPI_COMM_WORLD);
    case BCAST:
        return ours ? MPI_Bcast(k->a, n, MPI_DOUBLE, k->root, MPI_COMM_WORLD)
                    : PMPI_Bcast(k->a, n, MPI_DOUBLE, k->root, MPI_COMM_WORLD);
    default:
        return ours ? MPI_Reduce(k->a, k->b, n, MPI_DOUBLE, MPI_SUM, k->root, MPI_COMM_WORLD)
                    : PMPI_Reduce(k->a, k->b, n, MPI_DOUBLE, MPI_SUM, k->root, MPI_COMM_WORLD);
    }
}

/* the slowest rank's mean seconds per call over iters calls */
static double round_time(const bench *k, int ours, int iters) {
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) call(k, ours);
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static int usage(int rank) {
    if (rank == 0)
        fprintf(stderr, "usage: directcoll_bench allreduce|reduce_scatter|allgather|alltoall|broadcast[:ROOT]|"
                        "reduce[:ROOT] native|ours|both ROUND_SECONDS BYTES...\n");
    return 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    bench k = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &k.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &k.size);
    int rc = 0;
    const char *titles[] = {"Allreduce", "Reduce_scatter_block", "Allgather", "Alltoall", "Bcast", "Reduce"};
    int native = 0, ours = 0;
    double seconds = argc > 3 ? atof(argv[3]) : 0;
    if (argc < 4 || seconds <= 0) rc = usage(k.rank);
    else if (strcmp(argv[1], "allreduce") == 0) k.coll = ALLREDUCE;
    else if (strcmp(argv[1], "reduce_scatter") == 0) k.coll = REDUCE_SCATTER;
    else if (strcmp(argv[1], "allgather") == 0) k.coll = ALLGATHER;
    else if (strcmp(argv[1], "alltoall") == 0) k.coll = ALLTOALL;
    else if (strncmp(argv[1], "broadcast", 9) == 0 && (argv[1][9] == '\0' || argv[1][9] == ':')) k.coll = BCAST;
    else if (strncmp(argv[1], "reduce", 6) == 0 && (argv[1][6] == '\0' || argv[1][6] == ':')) k.coll = REDUCE;
    else rc = usage(k.rank);
    if (rc == 0 && strchr(argv[1], ':')) k.root = atoi(strchr(argv[1], ':') + 1);
    if (rc == 0 && (k.root < 0 || k.root >= k.size)) rc = usage(k.rank);
    if (rc == 0) {
        native = strcmp(argv[2], "native") == 0 || strcmp(argv[2], "both") == 0;
        ours = strcmp(argv[2], "ours") == 0 || strcmp(argv[2], "both") == 0;
        if (!native && !ours) rc = usage(k.rank);
    }
    if (rc != 0) {
        MPI_Finalize();
        return rc;
    }
    if (k.rank == 0) {
        printf("# OSU MPI %s Latency Test (directcoll bench, %s)\n", titles[k.coll], argv[2]);
        if (native && ours) printf("# %-10s  %16s  %16s\n", "Size", "Avg Latency(us)", "directcoll(us)");
        else printf("# %-10s  %16s\n", "Size", "Avg Latency(us)");
        fflush(stdout);
    }
    for (int s = 4; s < argc; s++) {
        long bytes = atol(argv[s]), elems = bytes / 8;
        if (k.coll == REDUCE_SCATTER) elems /= k.size;
        k.count = elems > 0 ? elems : 1;
        long in = k.coll == REDUCE_SCATTER || k.coll == ALLTOALL ? k.count * k.size : k.count;
        long out = k.coll == ALLGATHER || k.coll == ALLTOALL ? k.count * k.size : k.count;
        k.a = malloc((size_t)in * sizeof(double));
        k.b = malloc((size_t)out * sizeof(double));
        if (!k.a || !k.b) {
            fprintf(stderr, "directcoll_bench: out of memory for %ld bytes\n", bytes);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        for (long i = 0; i < in; i++) k.a[i] = k.rank + (double)i * 1e-3;
        memset(k.b, 0, (size_t)out * sizeof(double));
        double probe = round_time(&k, ours && !native, 3);  /* also builds and caches libdirectcoll's plan */
        if (native && ours) round_time(&k, 1, 3);
        int iters = probe > 0 ? (int)(seconds / probe) : 1000;
        iters = iters < 3 ? 3 : iters > 100000 ? 100000 : iters;
        PMPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
        double best[2] = {1e30, 1e30};
        for (int r = 0; r < 5; r++) {
            for (int which = 0; which < 2; which++) {
                if (!(which ? ours : native)) continue;
                double t = round_time(&k, which, iters);
                best[which] = t < best[which] ? t : best[which];
            }
        }
        long shown = k.coll == REDUCE_SCATTER ? k.count * k.size * 8 : k.count * 8;
        if (k.rank == 0) {
            if (native && ours) printf("%-12ld  %16.2f  %16.2f\n", shown, best[0] * 1e6, best[1] * 1e6);
            else printf("%-12ld  %16.2f\n", shown, best[ours ? 1 : 0] * 1e6);
            fflush(stdout);
        }
        free(k.a);
        free(k.b);
    }
    MPI_Finalize();
    return 0;
}
