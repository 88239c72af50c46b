import Foundation
import XCTest

import FlagshipStore

/// A test case with its own temporary directory, removed after the test with everything in it.
/// Databases opened through `openStore` are closed before the directory goes.
class StoreTestCase: XCTestCase {
    private(set) var directory: URL!
    private var openedStores: [FlagshipDatabase] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("FlagshipStoreTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
    }

    override func tearDownWithError() throws {
        for store in openedStores { store.close() }
        openedStores = []
        if let directory, FileManager.default.fileExists(atPath: directory.path) {
            try FileManager.default.removeItem(at: directory)
        }
        directory = nil
        try super.tearDownWithError()
    }

    /// `<temporary directory>/<name>`.
    func url(_ name: String = "flagship-test.sqlite") -> URL {
        directory.appendingPathComponent(name, isDirectory: false)
    }

    /// Opens (creating and migrating) a store that is closed after the test.
    func openStore(
        at url: URL? = nil, migrator: Migrator = Migrator(), now: @escaping @Sendable () -> Date = { fixedNow }
    ) throws -> FlagshipDatabase {
        let store = try FlagshipDatabase.open(at: url ?? self.url(), migrator: migrator, now: now)
        openedStores.append(store)
        return store
    }

    /// A plain connection to a file, for raw SQL, with no migration.
    func rawDatabase(at url: URL? = nil) throws -> Database {
        try Database(path: (url ?? self.url()).path)
    }

    /// Overwrites the root page of the table or index `name` in the store file with zeros (a damaged
    /// page); returns the file's bytes then, and the page's number.
    @discardableResult
    func zeroRootPage(of name: String, at url: URL? = nil) throws -> (bytes: Data, rootPage: Int64) {
        let url = url ?? self.url()
        let database = try rawDatabase(at: url)
        let rootPage = try XCTUnwrap(try database.integer("SELECT rootpage FROM sqlite_master WHERE name = '\(name)'"))
        database.close()
        var damaged = try fileBytes(url)
        damaged.replaceSubrange(Int(rootPage - 1) * 4_096 ..< Int(rootPage) * 4_096, with: Data(count: 4_096))
        try damaged.write(to: url)
        return (damaged, rootPage)
    }

    /// The id of a process that has exited (and been reaped): a session row naming it is stale.
    func deadProcessId() throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return Int(process.processIdentifier)
    }

    /// The names in the temporary directory, sorted.
    func directoryListing() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }
}

/// The clock of every test that does not say otherwise: 2024-11-21T06:20:00.123Z.
let fixedNowMilliseconds: Int64 = 1_732_170_000_123
let fixedNow = Date(unixMilliseconds: fixedNowMilliseconds)

/// A Flagship store whose `schema_migrations` records `version`, as a newer SDK would leave it.
func writeNewerSchemaDatabase(at url: URL, version: Int) throws {
    let store = try FlagshipDatabase.open(at: url, now: { fixedNow })
    defer { store.close() }
    try store.write { try $0.hits.insert([.sample("kept")]) }
    try store.database.write { connection in
        try connection.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            [SQLiteValue(version), "from_a_newer_sdk", .integer(fixedNowMilliseconds)]
        )
        try connection.execute("PRAGMA user_version = \(version)")
    }
}

// MARK: - Sample records

/// The hit cache document, version 1, of STORE.md.
func hitDocument(visitorId: String, type: String, time: Int64, label: String = "click") -> String {
    struct Document: Encodable {
        struct Payload: Encodable {
            let visitorId: String
            let anonymousId: String?
            let type: String
            let time: Int64
            let content: [String: String]
        }
        let version = 1
        let data: Payload
    }
    let content = ["t": type, "vid": visitorId, "ec": "Action Tracking", "ea": label, "ds": "APP", "cid": "env"]
    return json(Document(data: .init(visitorId: visitorId, anonymousId: nil, type: type, time: time, content: content)))
}

/// The visitor cache document, version 1, of STORE.md, with one campaign.
func visitorDocument(visitorId: String, anonymousId: String? = nil, consent: Bool = true, context: [String: String] = ["plan": "free"]) -> String {
    struct Document: Encodable {
        struct Campaign: Encodable {
            let campaignId = "c1", campaignName = "Checkout", variationGroupId = "vg1", variationGroupName = "All users"
            let variationId = "var1", variationName = "Green", isReference = false, type = "ab", activated = false
            let flags = ["btnColor": "green"]
        }
        struct Payload: Encodable {
            let visitorId: String
            let anonymousId: String?
            let consent: Bool
            let context: [String: String]
            let campaigns = [Campaign()]
            let assignmentsHistory = ["vg1": "var1"]
        }
        let version = 1
        let data: Payload
    }
    return json(Document(data: .init(visitorId: visitorId, anonymousId: anonymousId, consent: consent, context: context)))
}

func json(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // Encoding these plain structs cannot fail.
    return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
}

extension HitRecord {
    /// An EVENT hit of `visitorId` with a valid document; the id is `<visitorId>:<suffix>`.
    static func sample(
        _ suffix: String, visitorId: String = "visitor-1", type: String = "EVENT", isConsent: Bool = false,
        createdAt: Int64 = fixedNowMilliseconds, attempts: Int = 0
    ) -> HitRecord {
        HitRecord(
            id: "\(visitorId):\(suffix)", visitorId: visitorId, type: type, isConsent: isConsent,
            document: hitDocument(visitorId: visitorId, type: type, time: createdAt),
            createdAt: createdAt, attempts: attempts
        )
    }
}

extension VisitorRecord {
    static func sample(_ visitorId: String, anonymousId: String? = nil, consent: Bool = true, updatedAt: Int64 = fixedNowMilliseconds) -> VisitorRecord {
        VisitorRecord(
            visitorId: visitorId, anonymousId: anonymousId, consent: consent,
            document: visitorDocument(visitorId: visitorId, anonymousId: anonymousId, consent: consent), updatedAt: updatedAt
        )
    }
}

extension HitRecordStore {
    /// Every hit, oldest first, in the caller's transaction.
    func all() throws -> [HitRecord] {
        try page(limit: .max)
    }

    /// The ids of every hit, oldest first.
    func allIds() throws -> [String] {
        try all().map(\.id)
    }
}

// MARK: - Files

func fileBytes(_ url: URL) throws -> Data {
    try Data(contentsOf: url)
}

/// The permission bits of a file or directory, as `stat` reports them.
func posixPermissions(_ url: URL) throws -> Int {
    var info = stat()
    guard stat(url.path, &info) == 0 else {
        throw StoreError.fileSystem(path: url.path, reason: String(cString: strerror(errno)))
    }
    return Int(info.st_mode & 0o777)
}

/// Shortens a file to `length` bytes.
func truncateFile(_ url: URL, to length: Int) throws {
    let handle = try FileHandle(forWritingTo: url)
    defer { try? handle.close() }
    try handle.truncate(atOffset: UInt64(length))
}

// MARK: - Raw SQL

extension Database {
    /// The values of the first column of every row.
    func column(_ sql: String) throws -> [SQLiteValue] {
        try read { try $0.query(sql).map { $0[0] } }
    }

    func integer(_ sql: String) throws -> Int64? {
        try read { try $0.scalar(sql)?.int64 }
    }

    /// The names of the tables and views in the schema, sorted.
    func schemaObjectNames() throws -> [String] {
        try column("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name").compactMap(\.text)
    }
}

/// The `StoreError.sqlite` an error is, failing the test when it is something else.
func sqliteError(_ error: any Error, file: StaticString = #filePath, line: UInt = #line) -> SQLiteError? {
    guard case .sqlite(let sqliteError)? = error as? StoreError else {
        XCTFail("expected StoreError.sqlite, got \(error)", file: file, line: line)
        return nil
    }
    return sqliteError
}

/// Runs `body(0..<count)` on `count` threads of its own, all at once, and waits for them all.
/// Dedicated threads rather than a task group: the cooperative pool has one thread per core,
/// which would run blocking bodies a few at a time instead of together.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.start()
    }
    group.wait()
}
