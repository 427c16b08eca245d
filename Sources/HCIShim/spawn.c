// posix_spawn_file_actions_addclosefrom_np needs _GNU_SOURCE (see gaend_spawn.h). No logic
// beyond the call.
#define _GNU_SOURCE
#include <spawn.h>
#include "gaend_spawn.h"

int gaend_spawn_close_from(posix_spawn_file_actions_t *actions, int from) { return posix_spawn_file_actions_addclosefrom_np(actions, from); }
