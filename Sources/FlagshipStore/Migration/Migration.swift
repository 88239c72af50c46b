/// One forward step of the schema: the contents of `Migrations/NNNN_name.sql`.
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// `fnv1a64:` and 16 hex digits: FNV-1a over the SQL's UTF-8 bytes, exactly as written.
    /// It tells an edited step from the one a file recorded; it is no defence against forgery,
    /// which a hand edit of `schema_migrations` achieves anyway.
    package var checksum: String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in sql.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return "fnv1a64:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// What `schema_migrations` records of this step.
    package var record: MigrationRecord {
        MigrationRecord(name: name, checksum: checksum)
    }
}

/// What `schema_migrations` holds of one applied step: its name, and the checksum of its SQL
/// (`nil` for a step applied before checksums were recorded).
package struct MigrationRecord: Sendable, Equatable {
    package let name: String
    package let checksum: String?

    package init(name: String, checksum: String?) {
        self.name = name
        self.checksum = checksum
    }
}
