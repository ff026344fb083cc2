/* hmc_sigset.h — the kernel's 64 signals as one bit mask, as the tracer's signal
 * layer keeps them (hmc_signal.c, hmc_signal_real.c, hmc_signal_compat.c): bit sig - 1
 * for signal sig, and the first 64 bits of a sigset_t, which are what the kernel and
 * glibc's sigaction copy. Internal to those files. */
#ifndef HMC_SIGSET_H
#define HMC_SIGSET_H

#include <signal.h>
#include <stdint.h>
#include <string.h>

#define NSIG_K 65                /* the kernel's signals are 1..64 */
#define BIT(sig) (1ull << ((sig) - 1))

static inline uint64_t bits_of(const sigset_t *s)
{
    uint64_t m;
    memcpy(&m, s, sizeof(m));
    return m;
}

/* Only the first 64 bits: what the kernel and glibc's sigaction copy. */
static inline void set_bits(sigset_t *s, uint64_t m) { memcpy(s, &m, sizeof(m)); }

#endif
