/* placement_verdict.c — `placement_verdict FILE...`: one line per file, 1 when
 * libhmalloc.so's reader (hmi_placement_load) accepts it, 0 when it refuses it. The
 * C side of tests/py/test_placement_grammar.py, which gives the same files to
 * hmtune/core/placement.py's reader and wants the same verdicts. */
#include "hmi_placement.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct hmi_placement p;
        char err[256];
        int ok = hmi_placement_load(argv[i], &p, err, sizeof err) == 0;
        if (ok)
            hmi_placement_free(&p);
        printf("%d\n", ok);
    }
    return 0;
}
