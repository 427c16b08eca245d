// Closing a child's inherited descriptors. A shim because glibc declares
// posix_spawn_file_actions_addclosefrom_np only under _GNU_SOURCE, which the Glibc module does
// not export to Swift.
#ifndef GAEND_SPAWN_H
#define GAEND_SPAWN_H
#include <spawn.h>

/// Adds "close every descriptor from `from` up" to `actions` (glibc >= 2.34). Returns 0 or an
/// error number.
int gaend_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

#endif
