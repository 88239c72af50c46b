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

// sqlite3_db_config is variadic, which Swift cannot call. With this set, closing the last
// connection neither checkpoints the WAL into the file nor deletes the -wal and -shm files.
static inline int csqlite_disable_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

#endif
