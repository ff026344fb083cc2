/* Unit tests of common/hm_util.c and hm_env.c (the HMTUNE_* options: test_options.c). */
#include "hmt.h"
#include "hm_env.h"
#include "hm_util.h"

#include <string.h>

static void test_parse_size(void)
{
    uint64_t v = 0;
    CHECK(hm_parse_size("4096", &v) == 0 && v == 4096);
    CHECK(hm_parse_size("4K", &v) == 0 && v == 4096);
    CHECK(hm_parse_size("4k", &v) == 0 && v == 4096);
    CHECK(hm_parse_size("64KiB", &v) == 0 && v == 65536);
    CHECK(hm_parse_size("1M", &v) == 0 && v == 1048576);
    CHECK(hm_parse_size("2G", &v) == 0 && v == 2147483648ull);
    CHECK(hm_parse_size("1T", &v) == 0 && v == 1099511627776ull);
    CHECK(hm_parse_size("12B", &v) == 0 && v == 12);
    CHECK(hm_parse_size("", &v) == -1);
    CHECK(hm_parse_size("K", &v) == -1);
    CHECK(hm_parse_size("4X", &v) == -1);
    CHECK(hm_parse_size("-4", &v) == -1);
    CHECK(hm_parse_size("4 K", &v) == -1);
    CHECK(hm_parse_size("99999999999999999999", &v) == -1);
    CHECK(hm_parse_size("99999999999T", &v) == -1);
}

static void test_fmt(void)
{
    char b[32];
    size_t n = hm_fmt_u64(b, 0);
    CHECK(n == 1 && b[0] == '0');
    n = hm_fmt_u64(b, 18446744073709551615ull);
    b[n] = 0;
    CHECK(strcmp(b, "18446744073709551615") == 0);
}

static void test_rank(void)
{
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMI_RANK");
    unsetenv("PMIX_RANK");
    unsetenv("SLURM_PROCID");
    int size = 99;
    CHECK(hm_env_rank(&size) == -1 && size == 0);
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_NTASKS", "8", 1);
    CHECK(hm_env_rank(&size) == 5 && size == 8);
    setenv("PMI_RANK", "3", 1);
    CHECK(hm_env_rank(NULL) == 3);
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    CHECK(hm_env_rank(NULL) == 2);
    setenv("OMPI_COMM_WORLD_RANK", "x2", 1);
    CHECK(hm_env_rank(NULL) == 3);   /* malformed: the next variable wins */
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMI_RANK");
    unsetenv("SLURM_PROCID");
}

int main(void)
{
    RUN(test_parse_size);
    RUN(test_fmt);
    RUN(test_rank);
    HMT_END();
}
