/* fuzz_placement.c — libFuzzer target for hmi_placement_parse (make fuzz). Besides
 * the sanitizers' checks it aborts when an accepted result breaks the file's rules
 * (tier indexes and count, frame counts, the unlimited fallback, interned modules, the
 * program path) or when parsing the same bytes twice gives a different result or
 * message. */
#include "hm_modmap.h"
#include "hmi_placement.h"

#include <stdlib.h>
#include <string.h>

#define ENSURE(c) do { if (!(c)) abort(); } while (0)

static void check(const struct hmi_placement *p)
{
    ENSURE(p->ntiers >= 1 && p->ntiers <= HMI_MAX_TIER_LINES && p->depth >= 1 &&
           p->size_min <= p->size_max);
    if (p->program)
        ENSURE(p->program[0] == '/' && !strchr(p->program, '#') &&
               strlen(p->program) <= HMI_PROGRAM_MAX);
    for (uint32_t i = 0; i < p->ntiers; i++) {
        ENSURE(p->tiers[i].unlimited == (i + 1 == p->ntiers));
        ENSURE(p->tiers[i].unlimited || p->tiers[i].capacity > 0);
        ENSURE(strlen(p->tiers[i].name) >= 1 && strlen(p->tiers[i].name) <= 64);
    }
    for (uint32_t i = 0; i < p->nmodules; i++) {
        const struct hmi_module *m = &p->modules[i];
        ENSURE(m->len >= 1 && strlen(m->path) == m->len);
        ENSURE(m->hash == hm_fnv1a(m->path, m->len, 0xcbf29ce484222325ull));
        for (uint32_t j = 0; j < i && p->nmodules <= 64; j++)
            ENSURE(strcmp(m->path, p->modules[j].path) != 0);
    }
    for (uint32_t i = 0; i < p->nsites; i++) {
        const struct hmi_site *s = &p->sites[i];
        ENSURE(s->tier < p->ntiers);
        ENSURE(s->nframes >= 1 && s->nframes <= HMI_MAX_FRAMES && s->nframes <= p->depth);
        for (uint32_t k = 0; k < s->nframes; k++)
            ENSURE(s->frames[k].module < p->nmodules &&
                   s->frames[k].offset <= HM_FRAME_OFFMASK);
    }
}

static void same(const struct hmi_placement *a, const struct hmi_placement *b)
{
    ENSURE(a->ntiers == b->ntiers && a->nsites == b->nsites && a->nmodules == b->nmodules);
    ENSURE(a->depth == b->depth && a->size_min == b->size_min && a->size_max == b->size_max);
    ENSURE(!a->program == !b->program && (!a->program || !strcmp(a->program, b->program)));
    for (uint32_t i = 0; i < a->ntiers; i++)
        ENSURE(!strcmp(a->tiers[i].name, b->tiers[i].name) &&
               !strcmp(a->tiers[i].backend, b->tiers[i].backend) &&
               a->tiers[i].capacity == b->tiers[i].capacity &&
               a->tiers[i].unlimited == b->tiers[i].unlimited);
    for (uint32_t i = 0; i < a->nmodules; i++)
        ENSURE(!strcmp(a->modules[i].path, b->modules[i].path));
    for (uint32_t i = 0; i < a->nsites; i++) {
        ENSURE(a->sites[i].tier == b->sites[i].tier && a->sites[i].line == b->sites[i].line);
        ENSURE(a->sites[i].nframes == b->sites[i].nframes);
        for (uint32_t k = 0; k < a->sites[i].nframes; k++)
            ENSURE(a->sites[i].frames[k].module == b->sites[i].frames[k].module &&
                   a->sites[i].frames[k].offset == b->sites[i].frames[k].offset);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hmi_placement a, b;
    char ea[256], eb[256];
    int ra = hmi_placement_parse((const char *)data, size, &a, ea, sizeof ea);
    int rb = hmi_placement_parse((const char *)data, size, &b, eb, sizeof eb);
    ENSURE(ra == rb);
    if (ra != 0) {
        ENSURE(ra == -1 && a.arena == NULL && strncmp(ea, "line ", 5) == 0);
        ENSURE(strcmp(ea, eb) == 0);
        return 0;
    }
    check(&a);
    same(&a, &b);
    hmi_placement_free(&a);
    hmi_placement_free(&b);
    ENSURE(a.arena == NULL && a.nsites == 0);
    return 0;
}
