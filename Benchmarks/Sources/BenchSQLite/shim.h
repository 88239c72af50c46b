#ifndef BENCHSQLITE_SHIM_H
#define BENCHSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro that Swift cannot import. Binding with it copies the text, as
// the hit store does, so the raw baseline pays the same copy.
static inline int benchsqlite_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_TRANSIENT);
}

#endif
