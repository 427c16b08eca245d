// Kept in C because sockaddr_hci, the HCIDEVDOWN ioctl and termios speed constants come from
// C headers (libbluetooth-dev, glibc) that Swift imports poorly. No logic beyond the calls.
#include "HCIShim.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>

int gaend_hci_shim_version(void) { return 2; }

int gaend_hci_open_user_channel(int dev, int *stage) {
    *stage = GAEND_HCI_STAGE_SOCKET;
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (fd < 0) return -errno;

    // Bringing the device down fails harmlessly with EALREADY-like errors when it is down.
    *stage = GAEND_HCI_STAGE_DEVDOWN;
    if (ioctl(fd, HCIDEVDOWN, dev) < 0 && errno != EALREADY) {
        int e = errno;
        close(fd);
        return -e;
    }

    *stage = GAEND_HCI_STAGE_BIND;
    struct sockaddr_hci addr;
    memset(&addr, 0, sizeof(addr));
    addr.hci_family = AF_BLUETOOTH;
    addr.hci_dev = (unsigned short)dev;
    addr.hci_channel = HCI_CHANNEL_USER;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

static speed_t baud_constant(unsigned baud) {
    switch (baud) {
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    case 1000000: return B1000000;
    case 1500000: return B1500000;
    case 2000000: return B2000000;
    case 3000000: return B3000000;
    case 4000000: return B4000000;
    default: return 0;
    }
}

int gaend_serial_configure(int fd, unsigned baud, int rtscts) {
    speed_t speed = baud_constant(baud);
    if (speed == 0) return -EINVAL;
    struct termios t;
    if (tcgetattr(fd, &t) < 0) return -errno;
    cfmakeraw(&t);
    t.c_cflag |= CLOCAL | CREAD;
    if (rtscts) t.c_cflag |= CRTSCTS; else t.c_cflag &= ~CRTSCTS;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (cfsetispeed(&t, speed) < 0 || cfsetospeed(&t, speed) < 0) return -errno;
    if (tcsetattr(fd, TCSANOW, &t) < 0) return -errno;
    tcflush(fd, TCIOFLUSH);
    return 0;
}
