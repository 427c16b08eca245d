#include "HCIShim.h"
int gaend_hci_shim_version(void) { return 1; }
