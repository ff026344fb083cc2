/*
 * mpi_alloc.c — one allocation per MPI rank (built with mpicc; skipped when mpicc
 * is missing).
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   rank   malloc((rank+1)*1048576): 1048576 on rank 0, 2097152 on rank 1,
 *          3145728 on rank 2, ... ; touched, kept across an MPI_Barrier, freed.
 * Note: the MPI library allocates blocks of its own (some >= 64 KiB); they are
 * not marked here.
 *
 * Output: rank 0 prints "ok <number of ranks>", e.g. "ok 2"; exit 0.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank = 0, nranks = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    size_t size = (size_t)(rank + 1) * 1048576;
    volatile char *p = malloc(size);             /* SITE:rank */
    if (!p) {
        fprintf(stderr, "mpi_alloc: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < size; i += 4096)
        p[i] = (char)rank;
    p[size - 1] = 1;

    MPI_Barrier(MPI_COMM_WORLD);
    free((void *)p);

    if (rank == 0)
        printf("ok %d\n", nranks);
    MPI_Finalize();
    return 0;
}
