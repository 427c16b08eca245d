// pthread_setname_np needs _GNU_SOURCE (see gaend_thread.h). No logic beyond the call.
#define _GNU_SOURCE
#include <pthread.h>
#include "gaend_thread.h"

int gaend_name_current_thread(const char *name) { return pthread_setname_np(pthread_self(), name); }
