import Foundation

/// One row of `bucketing_files`: a bucketing file the SDK decided on, by version.
package struct BucketingFileVersion: Sendable, Equatable {
    package enum Origin: String, Sendable {
        case download, store, fleet, bootstrap
    }

    /// The sha256 of the file's bytes, 64 lowercase hex digits.
    package var version: String
    package var envId: String
    package var document: String
    package var origin: Origin
    /// Unix milliseconds.
    package var firstUsedAt: Int64
    package var lastUsedAt: Int64

    package init(version: String, envId: String, document: String, origin: Origin, firstUsedAt: Int64, lastUsedAt: Int64) {
        self.version = version
        self.envId = envId
        self.document = document
        self.origin = origin
        self.firstUsedAt = firstUsedAt
        self.lastUsedAt = lastUsedAt
    }
}

/// The `bucketing_files` table and the last use of each version (`bucketing_file_uses`, apart so
/// that marking a version used does not rewrite its document), as `db.bucketingFiles`, in the
/// caller's transaction.
package struct BucketingFileVersionStore {
    let connection: Connection

    /// Records that `file` is in use at `file.lastUsedAt` (a version kept already keeps its
    /// document, origin and first use), then deletes the environment's versions beyond the
    /// newest `keeping` by last use. Returns how many went.
    @discardableResult
    package func use(_ file: BucketingFileVersion, keeping: Int) throws(StoreError) -> Int {
        try connection.execute(
            """
            INSERT INTO main.bucketing_files (version, env_id, document, origin, first_used_at)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (version) DO NOTHING
            """,
            [.text(file.version), .text(file.envId), .text(file.document), .text(file.origin.rawValue), .integer(file.firstUsedAt)]
        )
        try markUsed(version: file.version, at: file.lastUsedAt)
        return try keepNewest(keeping, envId: file.envId)
    }

    /// Records that a version kept already is in use at `lastUsedAt`, without its document (a
    /// start that read the file's compiled form has none), then keeps the newest `keeping` as
    /// `use` does. `false` when the version is not kept: `use` it, with its document.
    package func markUsed(version: String, envId: String, at lastUsedAt: Int64, keeping: Int) throws(StoreError) -> Bool {
        let kept = try connection.scalar(
            "SELECT 1 FROM main.bucketing_files WHERE version = ? AND env_id = ?", [.text(version), .text(envId)]
        ) != nil
        guard kept else { return false }
        try markUsed(version: version, at: lastUsedAt)
        try keepNewest(keeping, envId: envId)
        return true
    }

    /// The version's last use: `at`, unless it was used later.
    private func markUsed(version: String, at lastUsedAt: Int64) throws(StoreError) {
        try connection.execute(
            """
            INSERT INTO main.bucketing_file_uses (version, last_used_at) VALUES (?, ?)
            ON CONFLICT (version) DO UPDATE SET last_used_at = max(last_used_at, excluded.last_used_at)
            """,
            [.text(version), .integer(lastUsedAt)]
        )
    }

    /// Deletes the environment's versions beyond the newest `keeping` by last use, and their
    /// uses (the foreign key's cascade does too, where the connection enforces foreign keys: an
    /// app's own connection may not).
    @discardableResult
    private func keepNewest(_ keeping: Int, envId: String) throws(StoreError) -> Int {
        let deleted = try connection.execute(
            """
            DELETE FROM main.bucketing_files WHERE env_id = ?1 AND version NOT IN (
                SELECT version FROM main.bucketing_files LEFT JOIN main.bucketing_file_uses USING (version)
                WHERE env_id = ?1 ORDER BY last_used_at DESC, version LIMIT ?2)
            """,
            [.text(envId), SQLiteValue(max(1, keeping))]
        )
        if deleted > 0 {
            try connection.execute(
                "DELETE FROM main.bucketing_file_uses WHERE version NOT IN (SELECT version FROM main.bucketing_files)"
            )
        }
        return deleted
    }

    /// The file kept under exactly that version (a replay's lookup: evidence matches whole or not at all).
    package func file(exactVersion version: String) throws -> BucketingFileVersion? {
        try connection.query("\(Self.selectColumns) WHERE version = ?", [.text(version)]).first.map(Self.record)
    }

    /// The version of that sha256, or of the only version that starts with that prefix (at
    /// least 4 hex digits); `nil` when none or several match.
    package func file(version: String) throws -> BucketingFileVersion? {
        let prefix = version.lowercased()
        guard prefix.count >= 4, prefix.allSatisfy(\.isHexDigit) else { return nil }
        let rows = try connection.query(
            "\(Self.selectColumns) WHERE version >= ? AND version < ? ORDER BY version LIMIT 2",
            [.text(prefix), .text(prefix + "g")]
        )
        guard rows.count == 1 else { return nil }
        return try Self.record(rows[0])
    }

    package func count() throws(StoreError) -> Int {
        Int(try connection.scalar("SELECT count(*) FROM main.bucketing_files")?.int64 ?? 0)
    }

    /// The environment's kept versions, most recently used first.
    package func versions(envId: String? = nil) throws -> [BucketingFileVersion] {
        if let envId {
            return try connection.query("\(Self.selectColumns) WHERE env_id = ? ORDER BY last_used_at DESC, version", [.text(envId)])
                .map(Self.record)
        }
        return try connection.query("\(Self.selectColumns) ORDER BY last_used_at DESC, version").map(Self.record)
    }

    /// A version without a use (one written by hand) reads as last used when first used.
    private static let selectColumns = """
        SELECT version, env_id, document, origin, first_used_at, coalesce(last_used_at, first_used_at) AS last_used_at
        FROM main.bucketing_files LEFT JOIN main.bucketing_file_uses USING (version)
        """

    private static func record(_ row: Row) throws -> BucketingFileVersion {
        let originText = try row.text(3)
        guard let origin = BucketingFileVersion.Origin(rawValue: originText) else {
            throw StoreError.unexpectedValue(column: "bucketing_files.origin", found: "'\(originText)' is not a known origin")
        }
        return BucketingFileVersion(version: try row.text(0), envId: try row.text(1), document: try row.text(2), origin: origin,
                                    firstUsedAt: try row.int64(4), lastUsedAt: try row.int64(5))
    }
}

extension Connection {
    /// The `bucketing_files` table, in this connection's transaction.
    package var bucketingFiles: BucketingFileVersionStore { BucketingFileVersionStore(connection: self) }
}
