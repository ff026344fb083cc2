/* hmi_umf_absent.c — the umf:* backends of a libhmalloc.so built without UMF's
 * headers (interpose/build.mk found no libumf.pc or umf-config.cmake under
 * UMF_ROOT): every umf: tier is unavailable with the reason and how to get UMF, and
 * its sites go to the default allocator, as when libumf.so.1 is missing at run time
 * (hmi_backend_umf.c). A tier never opens here, so the object calls are never made. */
#include "hmi_backend_int.h"

int hmi_umf_open(struct hmi_bk *b, uint32_t index, const char *spec, uint64_t capacity,
                 int unlimited, struct hmi_msg *why)
{
    (void)b, (void)index, (void)spec, (void)capacity, (void)unlimited;
    hmi_msg_str(why, "this libhmalloc.so was built without UMF: run 'make deps' (or set "
                     "UMF_ROOT=PREFIX of an installed UMF) and rebuild");
    return -1;
}

void *hmi_umf_alloc(struct hmi_bk *b, size_t size, size_t align, int zero)
{
    (void)b, (void)size, (void)align, (void)zero;
    return NULL;
}

void *hmi_umf_chunk(uint32_t index, unsigned code)
{
    (void)index, (void)code;
    return NULL;
}

void hmi_umf_free(struct hmi_bk *b, void *p, size_t usable) { (void)b, (void)p, (void)usable; }

size_t hmi_umf_usable(const struct hmi_bk *b, const void *p) { (void)b, (void)p; return 0; }

void hmi_umf_close(struct hmi_bk *b) { (void)b; }

void hmi_umf_atfork_prepare(void) {}

void hmi_umf_atfork_release(void) {}
