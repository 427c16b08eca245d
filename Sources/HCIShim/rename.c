// renameat2 needs _GNU_SOURCE (see gaend_rename.h). No logic beyond the call.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include "gaend_rename.h"

int gaend_rename_exchange(const char *a, const char *b) { return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE); }
