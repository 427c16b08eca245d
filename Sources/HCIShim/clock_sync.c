// See gaend_clock.h: adjtimex() is not reachable from Swift's Glibc module.
#include "gaend_clock.h"
#include <errno.h>
#include <string.h>
#include <sys/timex.h>

int gaend_clock_kernel_synchronized(void) {
    struct timex tx;
    memset(&tx, 0, sizeof tx); // modes = 0: read only
    int state = adjtimex(&tx);
    if (state < 0) return -errno;
    if (state == TIME_ERROR || (tx.status & STA_UNSYNC)) return 0;
    return 1;
}
