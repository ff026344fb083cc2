/* hmc_papi.c — see hmc_papi.h. */
#include "hmc_papi.h"

#include <dlfcn.h>
#include <papi.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Debian's soname first, then the usual ones. */
static const char *const g_libs[] = { "libpapi.so.7.0", "libpapi.so.7.2", "libpapi.so.7.1",
                                      "libpapi.so.7", "libpapi.so" };
/* Components that touch devices or print at initialisation (rocm_smi writes to
 * standard error without a GPU): the counters need only perf_event. */
static const char *const g_quiet[] = {
    "rocm", "rocm_smi", "cuda", "nvml", "sde", "perf_event_uncore", "infiniband",
    "lmsensors", "powercap", "rapl", "libmsr", "coretemp", "net", "io", "appio",
    "lustre", "stealtime", "intel_gpu", "pcp", "micpower", "host_micpower", "vmware",
};

static unsigned long kernel_tid(void) { return (unsigned long)syscall(SYS_gettid); }

#define SYM(field, name)                                                        \
    do {                                                                       \
        *(void **)&p->field = dlsym(p->h, name);                               \
        if (!p->field) {                                                       \
            snprintf(why, n, "PAPI has no %s", name);                          \
            return -1;                                                         \
        }                                                                      \
    } while (0)

int hmc_papi_open(struct hmc_papi *p, char *why, size_t n)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < sizeof(g_libs) / sizeof(g_libs[0]) && !p->h; i++)
        p->h = dlmopen(LM_ID_NEWLM, g_libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!p->h) {
        snprintf(why, n, "PAPI cannot be loaded (%s; install libpapi7.0, make deps does)",
                 dlerror());
        return -1;
    }
    int (*library_init)(int);
    int (*thread_init)(unsigned long (*)(void));
    int (*disable)(const char *);
    *(void **)&library_init = dlsym(p->h, "PAPI_library_init");
    *(void **)&thread_init = dlsym(p->h, "PAPI_thread_init");
    *(void **)&disable = dlsym(p->h, "PAPI_disable_component_by_name");
    if (!library_init || !thread_init) {
        snprintf(why, n, "PAPI has no PAPI_library_init or PAPI_thread_init");
        return -1;
    }
    SYM(create_eventset, "PAPI_create_eventset");
    SYM(add_named_event, "PAPI_add_named_event");
    SYM(event_name_to_code, "PAPI_event_name_to_code");
    SYM(start, "PAPI_start");
    SYM(read, "PAPI_read");
    SYM(stop, "PAPI_stop");
    SYM(cleanup_eventset, "PAPI_cleanup_eventset");
    SYM(destroy_eventset, "PAPI_destroy_eventset");
    SYM(register_thread, "PAPI_register_thread");
    SYM(unregister_thread, "PAPI_unregister_thread");
    SYM(strerror, "PAPI_strerror");
    SYM(get_event_info, "PAPI_get_event_info");
    for (size_t i = 0; disable && i < sizeof(g_quiet) / sizeof(g_quiet[0]); i++)
        disable(g_quiet[i]);
    int v = library_init(PAPI_VER_CURRENT);
    if (v != PAPI_VER_CURRENT) {
        snprintf(why, n, "PAPI_library_init failed (%s)",
                 v > 0 ? "another PAPI version" : p->strerror(v));
        return -1;
    }
    int r = thread_init(kernel_tid);
    if (r != PAPI_OK) {
        snprintf(why, n, "PAPI_thread_init failed (%s)", p->strerror(r));
        return -1;
    }
    return 0;
}

static void describe(struct hmc_papi *p, struct hmc_counter *c, const char *name)
{
    PAPI_event_info_t info;
    size_t k = strlen(name);
    if (k >= sizeof(c->name))
        k = sizeof(c->name) - 1;
    memcpy(c->name, name, k);
    c->name[k] = 0;
    c->descr[0] = 0;
    memset(&info, 0, sizeof(info));
    if (p->get_event_info(c->code, &info) == PAPI_OK) {
        const char *d = info.long_descr[0] ? info.long_descr : info.short_descr;
        size_t m = strnlen(d, sizeof(c->descr) - 1);
        memcpy(c->descr, d, m);
        c->descr[m] = 0;
    }
}

static void note(char *buf, size_t cap, const char *name, const char *why)
{
    size_t k = strlen(buf);
    if (k + 8 < cap)
        snprintf(buf + k, cap - k, "%s%s (%s)", k ? ", " : "", name, why);
}

/* Add the names of list that PAPI can count together to set; unavailable: those it
 * cannot, with why. */
static void try_list(struct hmc_papi *p, int es, const char *list, struct hmc_counter_set *set,
                     char *unavailable, size_t cap)
{
    const char *s = list;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        char name[HMC_COUNTER_NAME];
        if (k > 0 && k < sizeof(name)) {
            memcpy(name, s, k);
            name[k] = 0;
            int code = 0, r = p->event_name_to_code(name, &code);
            if (r == PAPI_OK)
                r = p->add_named_event(es, name);
            if (r != PAPI_OK)
                note(unavailable, cap, name, p->strerror(r));
            else if (set->n == HMC_MAX_COUNTERS)
                note(unavailable, cap, name, "more than 8 counters");
            else {
                set->c[set->n].code = code;
                describe(p, &set->c[set->n++], name);
            }
        } else if (k > 0) {
            note(unavailable, cap, "(a name)", "longer than 63 bytes");
        }
        s += k + (e ? 1 : 0);
    }
}

int hmc_papi_choose(struct hmc_papi *p, const char *list, struct hmc_counter_set *set,
                    char *why, size_t n)
{
    memset(set, 0, sizeof(*set));
    if (!strcmp(list, "default") || !*list)
        list = HMC_COUNTERS_DEFAULT;
    p->register_thread();
    int es = PAPI_NULL, r = p->create_eventset(&es);
    if (r != PAPI_OK) {
        snprintf(why, n, "PAPI_create_eventset failed (%s)", p->strerror(r));
        return -1;
    }
    try_list(p, es, list, set, set->unavailable, sizeof(set->unavailable));
    if (set->n == 0) {
        char ignored[512] = "";
        set->software = 1;
        try_list(p, es, HMC_COUNTERS_SOFTWARE, set, ignored, sizeof(ignored));
    }
    p->cleanup_eventset(es);
    p->destroy_eventset(&es);
    return 0;
}

int hmc_papi_thread_start(struct hmc_papi *p, const struct hmc_counter_set *set)
{
    if (set->n == 0)
        return -1;
    p->register_thread();
    int es = PAPI_NULL;
    if (p->create_eventset(&es) != PAPI_OK)
        return -1;
    for (int i = 0; i < set->n; i++)
        if (p->add_named_event(es, set->c[i].name) != PAPI_OK)
            goto fail;
    if (p->start(es) == PAPI_OK)
        return es;
fail:
    p->cleanup_eventset(es);
    p->destroy_eventset(&es);
    return -1;
}

void hmc_papi_thread_stop(struct hmc_papi *p, int es)
{
    long long v[HMC_MAX_COUNTERS];
    p->stop(es, v);
    p->cleanup_eventset(es);
    p->destroy_eventset(&es);
    p->unregister_thread();
}
