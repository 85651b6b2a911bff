/* A stand-alone prototype of the 2-rank bandwidth-optimal allreduce (reduce-scatter, then allgather: one exchange
 * of half the vector each) on MPI_DOUBLE / MPI_SUM, against MPI_Allreduce in the same run, that measured what
 * libdirectcoll's executor now does (docs/benchmarks.md, "Native runtime"):
 *   cur:  receive the half into a staging buffer, copy sendbuf's half into recvbuf, reduce (the executor before);
 *   seg:  segments of SEG bytes, SLOTS of them in flight in slots of a small staging buffer, each reduced as
 *         recvbuf = sendbuf + slot (three operands) as soon as it arrives; overlapAG 1 also sends each reduced
 *         segment at once (the allgather overlapped), 0 exchanges the reduced halves afterwards.
 * Best of 10 calls each; ratio = time(MPI_Allreduce) / time(ours).
 *
 *   mpicc -O3 -march=native -o proto benchmarks/native_pipeline_proto.c
 *   mpiexec -n 2 ./proto 67108864 65536 262144 524288 1048576 4194304 33554432
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void add3(double *restrict o, const double *restrict a, const double *restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}
static void add2(double *restrict o, const double *restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) o[i] += b[i];
}
int rank; size_t N;
double *sb, *rb, *stage;
/* current: recv half into stage, memcpy init, reduce, exchange other half */
static void cur(void) {
    size_t h = N / 2; int p = rank ^ 1;
    size_t mine = rank * h, other = (1 - rank) * h;
    MPI_Request r[2];
    MPI_Irecv(stage, h, MPI_DOUBLE, p, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(sb + other, h, MPI_DOUBLE, p, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    memcpy(rb + mine, sb + mine, h * 8);
    add2(rb + mine, stage, h);
    MPI_Irecv(rb + other, h, MPI_DOUBLE, p, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(rb + mine, h, MPI_DOUBLE, p, 1, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
}
static size_t SEG; static int SLOTS;
static void pipe_(int overlap_ag) {
    size_t h = N / 2; int p = rank ^ 1;
    size_t mine = rank * h, other = (1 - rank) * h;
    size_t ns = (h + SEG - 1) / SEG;
    MPI_Request *sr = malloc(2 * ns * sizeof *sr), rr[256];
    for (size_t i = 0; i < ns; i++) {
        size_t len = i * SEG + SEG > h ? h - i * SEG : SEG;
        MPI_Isend(sb + other + i * SEG, len, MPI_DOUBLE, p, 0, MPI_COMM_WORLD, &sr[i]);
    }
    for (size_t i = 0; i < ns && i < (size_t)SLOTS; i++) {
        size_t len = i * SEG + SEG > h ? h - i * SEG : SEG;
        MPI_Irecv(stage + (i % SLOTS) * SEG, len, MPI_DOUBLE, p, 0, MPI_COMM_WORLD, &rr[i % SLOTS]);
    }
    size_t nag = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t len = i * SEG + SEG > h ? h - i * SEG : SEG;
        MPI_Wait(&rr[i % SLOTS], MPI_STATUS_IGNORE);
        add3(rb + mine + i * SEG, sb + mine + i * SEG, stage + (i % SLOTS) * SEG, len);
        if (overlap_ag) { MPI_Isend(rb + mine + i * SEG, len, MPI_DOUBLE, p, 1, MPI_COMM_WORLD, &sr[ns + nag++]); }
        size_t j = i + SLOTS;
        if (j < ns) {
            size_t l2 = j * SEG + SEG > h ? h - j * SEG : SEG;
            MPI_Irecv(stage + (j % SLOTS) * SEG, l2, MPI_DOUBLE, p, 0, MPI_COMM_WORLD, &rr[j % SLOTS]);
        }
    }
    MPI_Request r[2];
    if (!overlap_ag) {
        MPI_Irecv(rb + other, h, MPI_DOUBLE, p, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(rb + mine, h, MPI_DOUBLE, p, 1, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        MPI_Waitall(ns, sr, MPI_STATUSES_IGNORE);
    } else {
        MPI_Request *ar = malloc(ns * sizeof *ar);
        for (size_t i = 0; i < ns; i++) {
            size_t len = i * SEG + SEG > h ? h - i * SEG : SEG;
            MPI_Irecv(rb + other + i * SEG, len, MPI_DOUBLE, p, 1, MPI_COMM_WORLD, &ar[i]);
        }
        MPI_Waitall(ns, ar, MPI_STATUSES_IGNORE);
        MPI_Waitall(ns + nag, sr, MPI_STATUSES_IGNORE);
        free(ar);
    }
    free(sr);
}
static double timeit(int which) {
    double best = 1e9;
    for (int it = 0; it < 10; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (which == 0) MPI_Allreduce(sb, rb, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (which == 1) cur();
        else pipe_(which == 3);
        double t = MPI_Wtime() - t0;
        if (t < best) best = t;
    }
    return best;
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    N = (size_t)atol(argv[1]) / 8;
    sb = malloc(N * 8); rb = malloc(N * 8); stage = malloc(N * 8);
    for (size_t i = 0; i < N; i++) sb[i] = i + rank;
    memset(rb, 0, N * 8); memset(stage, 0, N * 8);
    double tm = timeit(0), tc = timeit(1);
    if (rank == 0) printf("N=%zu MPI %.3f ms, cur %.3f ms (%.2f)\n", N * 8, tm * 1e3, tc * 1e3, tm / tc);
    for (int k = 2; k < argc; k++) for (SLOTS = 2; SLOTS <= 4; SLOTS += 2) for (int ov = 2; ov <= 3; ov++) {
        long seg = atol(argv[k]);
        SEG = (size_t)seg / 8;
        double tp = timeit(ov), tm2 = timeit(0);
        if (rank == 0) printf("seg %7ld slots %d overlapAG %d: %.3f ms, MPI %.3f (%.2f)\n", seg, SLOTS, ov == 3, tp * 1e3, tm2 * 1e3, tm2 / tp);
    }
    MPI_Finalize();
}
