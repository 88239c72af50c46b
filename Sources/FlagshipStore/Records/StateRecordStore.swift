/// The `sdk_state` table: small named values that other platforms keep in preferences
/// (whether the SDK was ever started here, generated ids).
package struct StateRecordStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    package func value(forKey key: String) throws -> String? {
        try database.read { try $0.scalar("SELECT value FROM sdk_state WHERE key = ?", [.text(key)])?.text }
    }

    package func setValue(_ value: String, forKey key: String, now: Int64) throws {
        try database.write { try Self.setValue(value, forKey: key, now: now, in: $0) }
    }

    /// Sets the key's value in the caller's transaction: the one upsert of `sdk_state`, for the
    /// store's own bookkeeping (sessions, schema hash, salvage notes) too.
    package static func setValue(_ value: String, forKey key: String, now: Int64, in connection: Connection) throws(StoreError) {
        try connection.execute(
            """
            INSERT INTO sdk_state (key, value, updated_at) VALUES (?, ?, ?)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """,
            [.text(key), .text(value), .integer(now)]
        )
    }

    /// Stores `value` only when the key has none; returns the value now stored, in one
    /// transaction, so two processes agree on a generated value.
    package func valueInsertingIfAbsent(_ value: String, forKey key: String, now: Int64) throws -> String {
        try database.write { connection in
            try connection.execute(
                "INSERT INTO sdk_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                [.text(key), .text(value), .integer(now)]
            )
            return try connection.scalar("SELECT value FROM sdk_state WHERE key = ?", [.text(key)])?.text ?? value
        }
    }

    package func removeValue(forKey key: String) throws {
        try database.write { try $0.execute("DELETE FROM sdk_state WHERE key = ?", [.text(key)]) }
    }

    /// Every value the SDK keeps; the store's own bookkeeping (`store.*`: open sessions, the
    /// last full check) is left out.
    package func all() throws -> [(key: String, value: String)] {
        try database.read { connection in
            try connection.query("SELECT key, value FROM sdk_state WHERE key NOT LIKE 'store.%' ORDER BY key").map { (try $0.text(0), try $0.text(1)) }
        }
    }
}
