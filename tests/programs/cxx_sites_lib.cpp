/*
 * cxx_sites_lib.cpp — libcxxsites.so: one allocation line (Memory::smalloc, called by
 * the template Memory::create<T>) and five callers of create (see cxx_sites.h).
 *
 * Sites by marker: the one traced call is `smalloc`; its callers are the CALLER lines
 * (frame 3 of each chain: malloc's caller smalloc, then create<T>, then the caller):
 *   atoms_x     create<double>(x, 20000)    160000 bytes
 *   atoms_v     create<double>(v, 30000)    240000 bytes   (same caller function)
 *   atoms_type  create<int>(type, 70000)    280000 bytes
 *   neigh_list  create<int>(list, 50000)    200000 bytes
 *   fix_f       create<double>(f, 40000)    320000 bytes
 * Every block is touched through a volatile pointer and freed by main.
 */
#include "cxx_sites.h"

#include <cstdlib>

namespace hmt {

__attribute__((noinline)) void *Memory::smalloc(std::size_t nbytes)
{
    void *p = std::malloc(nbytes);                       /* SITE:smalloc */
    if (!p)
        std::abort();
    static_cast<volatile char *>(p)[0] = 1;
    return p;
}

template <typename T> __attribute__((noinline)) T *Memory::create(T *&array, std::size_t n)
{
    array = static_cast<T *>(smalloc(n * sizeof(T)));
    static_cast<volatile T *>(array)[n - 1] = T(1);
    return array;
}

template double *Memory::create<double>(double *&, std::size_t);
template int *Memory::create<int>(int *&, std::size_t);

void Memory::sfree(void *p) { std::free(p); }

__attribute__((noinline)) void Atoms::grow(std::size_t n)
{
    mem->create(x, n);                                   /* CALLER:atoms_x */
    static_cast<volatile double *>(x)[1] = 2.0;
    mem->create(v, n + 10000);                           /* CALLER:atoms_v */
    static_cast<volatile double *>(v)[1] = 3.0;
    mem->create(type, n + 50000);                        /* CALLER:atoms_type */
    static_cast<volatile int *>(type)[1] = 4;
}

void Atoms::release()
{
    mem->sfree(x);
    mem->sfree(v);
    mem->sfree(type);
}

__attribute__((noinline)) void Neighbor::build(std::size_t n)
{
    mem->create(list, n);                                /* CALLER:neigh_list */
    static_cast<volatile int *>(list)[1] = 5;
}

void Neighbor::release() { mem->sfree(list); }

__attribute__((noinline)) void Fix::init(std::size_t n)
{
    mem->create(f, n);                                   /* CALLER:fix_f */
    static_cast<volatile double *>(f)[1] = 6.0;
}

void Fix::release() { mem->sfree(f); }

double checksum(const Atoms &a, const Neighbor &nb, const Fix &fx)
{
    return a.x[1] + a.v[1] + a.type[1] + nb.list[1] + fx.f[1];
}

}  // namespace hmt
