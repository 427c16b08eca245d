// zlib, for key files: one raw-deflate call per entry each way (KeyExportContainer reads, KeyExportWriter writes) and zlib's crc32 (the ZIP layer's
// structure is checked by KeyExportContainer itself).
#ifndef GAEND_CGAENZLIB_SHIM_H
#define GAEND_CGAENZLIB_SHIM_H
#include <zlib.h>
#endif
