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

// Reads `amount` bytes at `offset` of the main database file of `db`, through the file SQLite
// itself opened (`SQLITE_FCNTL_FILE_POINTER`, then the VFS's own `xRead`): no descriptor of the
// caller's, whose closing would drop SQLite's POSIX locks on the file. The raw file, not what the
// WAL holds. SQLITE_OK, SQLITE_IOERR_SHORT_READ past its end (the rest zeroed), another error.
static inline int csqlite_read_main_file(sqlite3 *db, void *buffer, int amount, sqlite3_int64 offset) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == 0
        || file->pMethods == 0 || file->pMethods->xRead == 0) {
        return SQLITE_NOTFOUND;
    }
    return file->pMethods->xRead(file, buffer, amount, offset);
}

#endif
