/* sparse_rows.c — a sparse matrix kept as one small block per row (values and
 * column indices together, 212..2000 bytes), the hot data of a sparse
 * matrix-vector product, next to a big cold array and small cold per-row records.
 * Every row comes from one malloc line: a site of many small blocks.
 *
 * usage: sparse_rows [ROWS [SWEEPS [SEED]]]   (defaults 20000 400 1)
 * Prints its own truth for the rows' site — how many blocks, their bytes, the most
 * bytes live at once — and a checksum that depends only on the arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row { int nnz; int pad; double val[]; };   /* then nnz int column indices */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t row_bytes(int nnz) { return sizeof(struct row) + (size_t)nnz * 12; }

static int *cols_of(struct row *r) { return (int *)(r->val + r->nnz); }

int main(int argc, char **argv)
{
    long nrows = argc > 1 ? atol(argv[1]) : 20000;
    long sweeps = argc > 2 ? atol(argv[2]) : 400;
    rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    if (nrows < 1 || sweeps < 0 || rng_state == 0) {
        fprintf(stderr, "usage: sparse_rows [ROWS [SWEEPS [SEED]]]\n");
        return 2;
    }
    size_t cold_n = 8u << 20;                                      /* 64 MiB */
    double *volatile cold = malloc(cold_n * sizeof(double));       /* SITE:cold */
    struct row **rows = malloc((size_t)nrows * sizeof(*rows));     /* SITE:row_index */
    char **meta = malloc((size_t)nrows * sizeof(*meta));           /* SITE:meta_index */
    double *x = malloc((size_t)nrows * sizeof(double));            /* SITE:vec_x */
    double *y = malloc((size_t)nrows * sizeof(double));            /* SITE:vec_y */
    if (!cold || !rows || !meta || !x || !y)
        return 1;
    for (size_t i = 0; i < cold_n; i++)
        cold[i] = (double)(i % 1000);
    uint64_t total = 0;
    for (long i = 0; i < nrows; i++) {
        int nnz = 17 + (int)(rnd() % 150);                         /* 212..2000 bytes */
        struct row *r = malloc(row_bytes(nnz));                    /* SITE:rows */
        if (!r)
            return 1;
        r->nnz = nnz;
        int *c = cols_of(r);
        for (int k = 0; k < nnz; k++) {
            r->val[k] = 1.0 / (double)(k + 1);
            c[k] = (int)((i + (long)(rnd() % 64) - 32 + nrows) % nrows);
        }
        rows[i] = r;
        total += row_bytes(nnz);
        meta[i] = malloc(40);                                      /* SITE:meta */
        if (!meta[i])
            return 1;
        snprintf(meta[i], 40, "row %ld", i);
        x[i] = 1.0;
    }
    /* the hot part: y = A x, x = y / |y|_inf, SWEEPS times */
    for (long s = 0; s < sweeps; s++) {
        double big = 0;
        for (long i = 0; i < nrows; i++) {
            const struct row *r = rows[i];
            const int *c = (const int *)(r->val + r->nnz);
            double acc = 0;
            for (int k = 0; k < r->nnz; k++)
                acc += r->val[k] * x[c[k]];
            y[i] = acc;
            big = acc > big ? acc : big;
        }
        for (long i = 0; i < nrows; i++)
            x[i] = y[i] / big;
    }
    double sum = 0, csum = 0;
    for (long i = 0; i < nrows; i++)
        sum += x[i];
    for (size_t i = 0; i < cold_n; i += 4096)
        csum += cold[i];
    printf("rows %ld row_bytes %llu peak_row_bytes %llu\n", nrows, (unsigned long long)total,
           (unsigned long long)total);
    printf("checksum %.12e %.1f %s\n", sum, csum, meta[nrows - 1]);
    for (long i = 0; i < nrows; i++) {
        free(rows[i]);
        free(meta[i]);
    }
    free(rows);
    free(meta);
    free(x);
    free(y);
    free(cold);
    return 0;
}
