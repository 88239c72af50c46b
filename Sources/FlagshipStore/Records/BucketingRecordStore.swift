/// One row of `bucketing`: the last bucketing file downloaded for an environment.
package struct BucketingRecord: Sendable, Equatable {
    package var envId: String
    /// The bucketing file, as JSON text.
    package var document: String
    /// The `Last-Modified` header of the download, sent back as `If-Modified-Since`.
    package var lastModified: String?
    /// Unix milliseconds.
    package var downloadedAt: Int64
    /// The file in the form a start decides from without parsing the JSON (the SDK's
    /// `CompiledBucketingFile`); `nil` when not written (yet).
    package var compiled: [UInt8]?

    package init(envId: String, document: String, lastModified: String?, downloadedAt: Int64, compiled: [UInt8]? = nil) {
        self.envId = envId
        self.document = document
        self.lastModified = lastModified
        self.downloadedAt = downloadedAt
        self.compiled = compiled
    }
}

/// The stored file of an environment as a start reads it: its compiled form, without the JSON.
package struct CompiledBucketingRecord: Sendable, Equatable {
    package var compiled: [UInt8]?
    /// The JSON's size in bytes (a start refuses a file over the limit without reading it).
    package var documentBytes: Int
    package var lastModified: String?
    package var downloadedAt: Int64
}

/// The `bucketing` table, seen through the connection of an open transaction (`db.bucketing`):
/// every operation runs in the caller's transaction (`Database.read` or `Database.write`).
package struct BucketingRecordStore {
    let connection: Connection

    /// Stores the file for its environment, replacing the previous one (and its compiled form).
    package func save(_ record: BucketingRecord) throws(StoreError) {
        try connection.execute(
            """
            INSERT INTO main.bucketing (env_id, document, last_modified, downloaded_at, compiled) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (env_id) DO UPDATE SET document = excluded.document,
                last_modified = excluded.last_modified, downloaded_at = excluded.downloaded_at, compiled = excluded.compiled
            """,
            [.text(record.envId), .text(record.document), SQLiteValue(record.lastModified), .integer(record.downloadedAt),
             record.compiled.map(SQLiteValue.blob) ?? .null]
        )
    }

    /// The stored file's compiled form and what a start needs beside it, without the JSON (its
    /// size read from its row's header). The form is read straight into the array returned.
    package func compiledFile(envId: String) throws -> CompiledBucketingRecord? {
        let row = try connection.query(
            """
            SELECT rowid, typeof(compiled) = 'blob', last_modified, downloaded_at
            FROM main.bucketing WHERE env_id = ?
            """,
            [.text(envId)]
        ).first
        guard let row else { return nil }
        let rowid = try row.int64(0)
        let compiled = try row.bool(1) ? try connection.bytes(of: "compiled", in: "bucketing", rowid: rowid) : nil
        return CompiledBucketingRecord(compiled: compiled,
                                       documentBytes: try connection.byteCount(of: "document", in: "bucketing", rowid: rowid),
                                       lastModified: try row.optionalText(2), downloadedAt: try row.int64(3))
    }

    /// Writes the compiled form of the stored file, if the file is still the one of `downloadedAt`
    /// (a download stored meanwhile keeps its own). Returns whether it was written.
    @discardableResult
    package func saveCompiled(_ compiled: [UInt8], envId: String, downloadedAt: Int64) throws(StoreError) -> Bool {
        try connection.execute(
            "UPDATE main.bucketing SET compiled = ? WHERE env_id = ? AND downloaded_at = ?",
            [.blob(compiled), .text(envId), .integer(downloadedAt)]
        ) > 0
    }

    package func file(envId: String) throws -> BucketingRecord? {
        try connection.query(
            "SELECT env_id, document, last_modified, downloaded_at FROM main.bucketing WHERE env_id = ?", [.text(envId)]
        ).first.map(Self.record)
    }

    /// A summary of each stored file, without its document.
    package struct Summary: Sendable, Equatable {
        package let envId: String
        package let lastModified: String?
        package let downloadedAt: Int64
        package let bytes: Int
    }

    package func summaries() throws -> [Summary] {
        try connection.query(
            "SELECT env_id, last_modified, downloaded_at, length(CAST(document AS BLOB)) FROM main.bucketing ORDER BY env_id"
        ).map { row in
            Summary(envId: try row.text(0), lastModified: try row.optionalText(1),
                    downloadedAt: try row.int64(2), bytes: try row.int(3))
        }
    }

    private static func record(_ row: Row) throws -> BucketingRecord {
        BucketingRecord(envId: try row.text(0), document: try row.text(1),
                        lastModified: try row.optionalText(2), downloadedAt: try row.int64(3))
    }
}

extension Connection {
    /// The `bucketing` table, in this connection's transaction.
    package var bucketing: BucketingRecordStore { BucketingRecordStore(connection: self) }
}
