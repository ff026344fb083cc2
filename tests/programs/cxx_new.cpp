/*
 * cxx_new.cpp — C++ allocations (operator new[] and std::allocator); libstdc++'s
 * operator new calls malloc, so the traced call sits one frame below these lines.
 *
 * Sites by marker name (the call line ends with a SITE-colon-<name> comment):
 *   new_array  new double[50000]              400000 bytes
 *   vector     std::vector<double> v(80000)   640000 bytes (value-initialised)
 * new_array is released with delete[]; the vector by its destructor.
 *
 * Output: "ok", exit 0.
 */
#include <cstdio>
#include <vector>

int main()
{
    double *a = new double[50000];               /* SITE:new_array */
    volatile double *va = a;
    for (int i = 0; i < 50000; i++)
        va[i] = i;

    std::vector<double> v(80000);                /* SITE:vector */
    volatile double *vv = v.data();
    for (int i = 0; i < 80000; i += 512)
        vv[i] = va[i % 50000] + 1.0;

    bool good = vv[512] == 513.0 && vv[79872] == (79872 % 50000) + 1.0;
    delete[] a;
    if (!good) {
        std::fprintf(stderr, "cxx_new: bad values\n");
        return 1;
    }
    std::puts("ok");
    return 0;
}
