// Atomic exchange of two paths. A shim because glibc declares renameat2 only under
// _GNU_SOURCE, which the Glibc module does not export to Swift.
#ifndef GAEND_RENAME_H
#define GAEND_RENAME_H

/// Swaps `a` and `b` (both must exist) in one step: renameat2(RENAME_EXCHANGE).
/// Returns 0, or -1 with errno set.
int gaend_rename_exchange(const char *a, const char *b);

#endif
