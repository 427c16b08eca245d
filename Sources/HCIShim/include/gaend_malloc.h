// glibc's allocator settings: mallopt and malloc_trim are in <malloc.h>, which the Glibc
// module does not export to Swift.
#ifndef GAEND_MALLOC_H
#define GAEND_MALLOC_H

/// At most `arenas` malloc arenas (M_ARENA_MAX). Returns 1 on success (mallopt's convention).
int gaend_malloc_limit_arenas(int arenas);

/// Returns free memory at the top of each arena and free whole pages inside them to the
/// system (malloc_trim(0)). Returns 1 if memory was released.
int gaend_malloc_trim(void);

#endif
