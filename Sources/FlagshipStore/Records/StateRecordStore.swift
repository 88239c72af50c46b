/// The `sdk_state` table: small named values that other platforms keep in preferences
/// (whether the SDK was ever started here, generated ids), seen through the connection of an
/// open transaction (`db.state`): every operation runs in the caller's transaction
/// (`Database.read` or `Database.write`).
package struct StateRecordStore {
    let connection: Connection

    package func value(forKey key: String) throws(StoreError) -> String? {
        try connection.scalar("SELECT value FROM main.sdk_state WHERE key = ?", [.text(key)])?.text
    }

    /// Sets the key's value: the one upsert of `sdk_state`, for the store's own bookkeeping
    /// (sessions, schema hash, salvage notes) too.
    package func setValue(_ value: String, forKey key: String, now: Int64) throws(StoreError) {
        try connection.execute(
            """
            INSERT INTO main.sdk_state (key, value, updated_at) VALUES (?, ?, ?)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """,
            [.text(key), .text(value), .integer(now)]
        )
    }

    /// Stores `value` only when the key has none; returns the value now stored. In one write
    /// transaction, two processes agree on a generated value.
    package func valueInsertingIfAbsent(_ value: String, forKey key: String, now: Int64) throws(StoreError) -> String {
        try connection.execute(
            "INSERT INTO main.sdk_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
            [.text(key), .text(value), .integer(now)]
        )
        return try connection.scalar("SELECT value FROM main.sdk_state WHERE key = ?", [.text(key)])?.text ?? value
    }

    package func removeValue(forKey key: String) throws(StoreError) {
        try connection.execute("DELETE FROM main.sdk_state WHERE key = ?", [.text(key)])
    }

    /// Every value the SDK keeps; the store's own bookkeeping (`store.*`: open sessions, the
    /// last full check) is left out.
    package func all() throws -> [(key: String, value: String)] {
        try connection.query("SELECT key, value FROM main.sdk_state WHERE key NOT LIKE 'store.%' ORDER BY key").map { (try $0.text(0), try $0.text(1)) }
    }
}

extension Connection {
    /// The `sdk_state` table, in this connection's transaction.
    package var state: StateRecordStore { StateRecordStore(connection: self) }
}
