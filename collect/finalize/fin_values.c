/* fin_values.c — the VALUES block of an enumerated event type in the .pcf: one
 * "<value><sep><label>" line per entry of a value table (struct fin_value, from the
 * X-macros of common/hm_events.h). fin_pcf.c writes the trace's own types with it,
 * fin_kinds.c, fin_objects.c and fin_recov.c the types they label. */
#include "fin.h"

void fin_pcf_values(FILE *f, const struct fin_value *v, size_t n, unsigned max,
                    const char *sep)
{
    fputs("VALUES\n", f);
    for (size_t i = 0; i < n && v[i].value <= max; i++)
        fprintf(f, "%u%s%s\n", v[i].value, sep, v[i].label);
}
