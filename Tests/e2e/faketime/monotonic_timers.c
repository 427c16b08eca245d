/*
 * Preloaded before libfaketime in the clock-step tests: monotonic and boot-time timers go to
 * the C library untouched; wall-clock timers keep libfaketime's rewriting.
 *
 * Why: libfaketime (0.9.10, Debian 12) rewrites every absolute timerfd deadline by its offset,
 * whatever the timer's clock, even with FAKETIME_DONT_FAKE_MONOTONIC=1. libdispatch, which runs
 * Swift's Task.sleep, arms CLOCK_MONOTONIC and CLOCK_BOOTTIME timerfds with absolute deadlines,
 * so under a wall clock faked N seconds ahead each deadline moves N seconds into the past:
 * with N below the machine's uptime every timer fires at once, and with N above it the deadline
 * is negative, timerfd_settime fails with EINVAL and the timer is never armed (strace:
 * `timerfd_settime(7, TFD_TIMER_ABSTIME, {it_value={tv_sec=-65051, ...}}) = -1 EINVAL`), so
 * every sleeping task waits forever. The product reads the monotonic clock unfaked; its
 * timers must be too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/timerfd.h>
#include <time.h>

#define TRACKED_FDS 65536
/* 1 for a timerfd on a wall clock (libfaketime's to rewrite), 0 for every other descriptor. */
static _Atomic unsigned char wall_timer[TRACKED_FDS];

typedef int (*create_fn)(int, int);
typedef int (*settime_fn)(int, int, const struct itimerspec *, struct itimerspec *);
typedef int (*gettime_fn)(int, struct itimerspec *);

static void *libc(void) {
    static void *handle;
    if (!handle) handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    return handle;
}

static int is_wall(int fd) { return fd >= 0 && fd < TRACKED_FDS && atomic_load(&wall_timer[fd]); }

int timerfd_create(int clockid, int flags) {
    create_fn next = (create_fn)dlsym(RTLD_NEXT, "timerfd_create");
    int fd = next(clockid, flags);
    if (fd >= 0 && fd < TRACKED_FDS)
        atomic_store(&wall_timer[fd], clockid == CLOCK_REALTIME || clockid == CLOCK_REALTIME_ALARM);
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *value, struct itimerspec *old) {
    settime_fn f = (settime_fn)(is_wall(fd) ? dlsym(RTLD_NEXT, "timerfd_settime") : dlsym(libc(), "timerfd_settime"));
    return f(fd, flags, value, old);
}

int timerfd_gettime(int fd, struct itimerspec *value) {
    gettime_fn f = (gettime_fn)(is_wall(fd) ? dlsym(RTLD_NEXT, "timerfd_gettime") : dlsym(libc(), "timerfd_gettime"));
    return f(fd, value);
}
