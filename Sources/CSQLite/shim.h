#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro that Swift cannot import: these wrappers make SQLite copy
// bound text and blobs before the Swift buffers they point into go away.
static inline int csqlite_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_TRANSIENT);
}

static inline int csqlite_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount) {
    return sqlite3_bind_blob(stmt, index, bytes, byteCount, SQLITE_TRANSIENT);
}

#endif
