/*
 * cxx_sites.cpp — main of cxx_sites (with libcxxsites.so next to it, found through
 * RUNPATH $ORIGIN): five allocation sites that share their two innermost frames
 * (Memory::smalloc, Memory::create<T>), see cxx_sites_lib.cpp.
 *
 * Output: "ok", exit 0.
 */
#include <cstdio>

#include "cxx_sites.h"

int main()
{
    hmt::Memory mem;
    hmt::Atoms atoms(&mem);
    hmt::Neighbor neigh(&mem);
    hmt::Fix fix(&mem);
    atoms.grow(20000);
    neigh.build(50000);
    fix.init(40000);
    double sum = hmt::checksum(atoms, neigh, fix);
    atoms.release();
    neigh.release();
    fix.release();
    if (sum != 20.0) {
        std::fprintf(stderr, "cxx_sites: bad checksum %g\n", sum);
        return 1;
    }
    std::puts("ok");
    return 0;
}
