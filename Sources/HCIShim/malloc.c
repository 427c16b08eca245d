// mallopt/malloc_trim (see gaend_malloc.h). No logic beyond the calls.
#include <malloc.h>
#include "gaend_malloc.h"

int gaend_malloc_limit_arenas(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

int gaend_malloc_trim(void) { return malloc_trim(0); }
