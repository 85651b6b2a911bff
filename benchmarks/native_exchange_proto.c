/* How fast MPICH moves 32 MiB each way between 2 ranks over point-to-point (Irecv/Isend of SEG-byte messages, all
 * posted at once; from 8 KiB up MPICH uses its CMA single-copy path, process_vm_readv), beside a 32 MiB memcpy on
 * each rank (docs/benchmarks.md, "Native runtime": why a point-to-point schedule trails MPICH's allreduce).
 *
 *   mpicc -O2 -o xch benchmarks/native_exchange_proto.c && mpiexec -n 2 ./xch
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t total = 32u << 20;
    char *a = malloc(total), *b = malloc(total);
    memset(a, 1, total); memset(b, 2, total);
    long segs[] = {0, 4096, 7168, 65536, 262144, 1048576};
    for (int k = 0; k < 6; k++) {
        size_t seg = segs[k] ? segs[k] : total;
        size_t n = (total + seg - 1) / seg;
        MPI_Request *r = malloc(2 * n * sizeof *r);
        double best = 1e9;
        for (int it = 0; it < 8; it++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (size_t i = 0; i < n; i++) {
                size_t len = i * seg + seg > total ? total - i * seg : seg;
                MPI_Irecv(b + i * seg, (int)len, MPI_BYTE, rank ^ 1, 0, MPI_COMM_WORLD, &r[2 * i]);
                MPI_Isend(a + i * seg, (int)len, MPI_BYTE, rank ^ 1, 0, MPI_COMM_WORLD, &r[2 * i + 1]);
            }
            MPI_Waitall(2 * n, r, MPI_STATUSES_IGNORE);
            double t = MPI_Wtime() - t0;
            if (t < best) best = t;
        }
        double t0 = MPI_Wtime();
        for (int it = 0; it < 5; it++) memcpy(b, a, total);
        double tm = (MPI_Wtime() - t0) / 5;
        if (rank == 0) printf("seg %8zu: exchange 32MiB %.2f ms (%.2f GB/s); memcpy %.2f ms\n", seg, best * 1e3, total / best / 1e9, tm * 1e3);
        free(r);
    }
    MPI_Finalize();
}
