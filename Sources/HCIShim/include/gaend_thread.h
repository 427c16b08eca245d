// Thread names. A shim because glibc declares pthread_setname_np only under _GNU_SOURCE,
// which the Glibc module does not export to Swift.
#ifndef GAEND_THREAD_H
#define GAEND_THREAD_H

/// Names the calling thread (/proc/PID/task/TID/comm; the caller keeps it to 15 bytes).
/// Returns 0 or an errno value.
int gaend_name_current_thread(const char *name);

#endif
