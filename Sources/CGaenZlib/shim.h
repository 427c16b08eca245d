// zlib, for key files (its own module name: ZIPFoundation, used by the writer, has a "CZlib"): one raw-deflate inflate call per entry and zlib's crc32 (the ZIP layer's
// structure is checked by KeyExportContainer itself).
#ifndef GAEND_CGAENZLIB_SHIM_H
#define GAEND_CGAENZLIB_SHIM_H
#include <zlib.h>
#endif
