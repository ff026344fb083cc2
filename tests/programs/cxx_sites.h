/*
 * cxx_sites.h — a small C++ code shaped like LAMMPS's memory handling: every array is
 * allocated through one template (Memory::create<T>) that calls one wrapper
 * (Memory::smalloc) that calls malloc. All sites then share their two innermost
 * frames; they differ only further out (the caller, and which call in the caller).
 * The classes live in libcxxsites.so (exported symbols, like liblammps.so); main is
 * in cxx_sites.
 */
#ifndef CXX_SITES_H
#define CXX_SITES_H

#include <cstddef>

namespace hmt {

class Memory {
public:
    void *smalloc(std::size_t nbytes);
    template <typename T> T *create(T *&array, std::size_t n);
    void sfree(void *p);
};

class Atoms {
public:
    explicit Atoms(Memory *m) : mem(m) {}
    void grow(std::size_t n);
    void release();
    double *x = nullptr, *v = nullptr;
    int *type = nullptr;
private:
    Memory *mem;
};

class Neighbor {
public:
    explicit Neighbor(Memory *m) : mem(m) {}
    void build(std::size_t n);
    void release();
    int *list = nullptr;
private:
    Memory *mem;
};

class Fix {
public:
    explicit Fix(Memory *m) : mem(m) {}
    void init(std::size_t n);
    void release();
    double *f = nullptr;
private:
    Memory *mem;
};

double checksum(const Atoms &a, const Neighbor &nb, const Fix &fx);

}  // namespace hmt

#endif
