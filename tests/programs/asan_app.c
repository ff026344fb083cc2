/* asan_app.c — a program built with -fsanitize=address (issue 42): its ASan runtime
 * insists on coming first in the initial library list, where hmtune's preload library
 * is. Allocates one block, fills it, prints a checksum of it and "ok"; exit 0.
 *
 * Sites: asan_block 300000 (freed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    unsigned char *p = malloc(300000);                       /* SITE:asan_block */
    if (!p)
        return 1;
    memset(p, 3, 300000);
    unsigned long sum = 0;
    for (size_t i = 0; i < 300000; i += 1000)
        sum += p[i];
    free(p);
    printf("sum %lu\nok\n", sum);
    return 0;
}
