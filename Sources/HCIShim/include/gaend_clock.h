// Clock synchronisation state from the kernel. A shim because glibc's adjtimex() and
// struct timex are not exported to Swift by the Glibc module.
#ifndef GAEND_CLOCK_H
#define GAEND_CLOCK_H

/// Queries adjtimex() without changing anything (modes = 0).
/// Returns 1 if the kernel considers the clock synchronised, 0 if not (TIME_ERROR or
/// STA_UNSYNC), -errno if the call failed.
int gaend_clock_kernel_synchronized(void);

#endif
