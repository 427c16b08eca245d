// HCIShim: the few Linux calls Swift cannot make comfortably (HCI socket with the user
// channel, device ioctls, termios). No logic lives here; errors come back as -errno so the
// Swift side can name the cause.
#ifndef GAEND_HCISHIM_H
#define GAEND_HCISHIM_H

int gaend_hci_shim_version(void);

/// Which call failed in gaend_hci_open_user_channel (for the error message).
enum gaend_hci_stage {
    GAEND_HCI_STAGE_SOCKET = 1,
    GAEND_HCI_STAGE_DEVDOWN = 2,
    GAEND_HCI_STAGE_BIND = 3,
};

/// Opens hci<dev> on the HCI user channel (exclusive raw access, the kernel's own host stack
/// and bluetoothd kept away): socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI), ioctl HCIDEVDOWN
/// (the device must be down to bind the user channel), bind(HCI_CHANNEL_USER).
/// Returns the socket, or -errno with *stage set to the failing call.
int gaend_hci_open_user_channel(int dev, int *stage);

/// Puts a tty into raw 8N1 mode at `baud` with RTS/CTS flow control if `rtscts`, as H4 UARTs
/// expect. Returns 0 or -errno (-EINVAL for a baud rate termios cannot express).
int gaend_serial_configure(int fd, unsigned baud, int rtscts);

#include "gaend_clock.h"
#include "gaend_thread.h"
#include "gaend_rename.h"
#include "gaend_malloc.h"
#include "gaend_spawn.h"
#endif
