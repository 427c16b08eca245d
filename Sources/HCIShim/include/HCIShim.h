// HCIShim: the few Linux calls Swift cannot make comfortably (HCI socket with the user
// channel, device ioctls, termios). No logic lives here.
#ifndef GAEND_HCISHIM_H
#define GAEND_HCISHIM_H
int gaend_hci_shim_version(void);
#include "gaend_clock.h"
#endif
