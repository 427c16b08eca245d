// The system libsqlite3 (design card: libsqlite3-dev), under GaenSQLite.
#ifndef GAEND_CSQLITE3_SHIM_H
#define GAEND_CSQLITE3_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: bound bytes and text are copied by SQLite.
static inline sqlite3_destructor_type gaend_sqlite3_transient(void) { return SQLITE_TRANSIENT; }
#endif
