import BenchSQLite
import BenchSupport
import AsyncHTTPClient
import Benchmark
import Flagship
import FlagshipLocalServer
import FlagshipPostgres
import NIOCore
import Foundation
import PostgresTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The local server's sample bucketing file (three campaigns) plus seven campaigns targeted on
/// the visitors' context, and the visitors of every round: ids and contexts fixed in advance.
struct ServerLoopFixture: Sendable {
    let json: Data
    let file: BucketingFile
    /// The flags each visitor reads (with exposure): the sample's and two of the added campaigns'.
    static let flagKeys = ["btnColor", "extra0", "extra1"]

    init() throws {
        var file = try XCTUnwrapDictionary(JSONSerialization.jsonObject(with: ServedBucketingFile.sampleData))
        var campaigns = file["campaigns"] as? [[String: Any]] ?? []
        let rules: [(String, String, Any)] = [
            ("country", "EQUALS", ["fr", "de", "it"]), ("age", "GREATER_THAN_OR_EQUALS", 18), ("plan", "NOT_EQUALS", "free"),
            ("device", "CONTAINS", "phone"), ("visits", "LOWER_THAN", 40), ("isVip", "EQUALS", false), ("country", "NOT_EQUALS", "us"),
        ]
        for (index, rule) in rules.enumerated() {
            campaigns.append([
                "id": "c-extra-\(index)", "name": "Extra \(index)", "type": "ab",
                "variationGroups": [[
                    "id": "vg-extra-\(index)", "name": "Targeted \(index)",
                    "targeting": ["targetingGroups": [["targetings": [["key": rule.0, "operator": rule.1, "value": rule.2]]]]],
                    "variations": [
                        ["id": "v-extra-\(index)-a", "name": "A", "reference": true, "allocation": 50,
                         "modifications": ["type": "FLAG", "value": ["extra\(index)": "a"]]],
                        ["id": "v-extra-\(index)-b", "name": "B", "allocation": 50,
                         "modifications": ["type": "FLAG", "value": ["extra\(index)": "b"]]],
                    ],
                ]],
            ])
        }
        file["campaigns"] = campaigns
        json = try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys])
        self.file = try BucketingFile(json: json)
    }

    /// The body the SDK posts to the Decision API for visitor `index` of `round`: what the raw
    /// posters send, so that they compare with the SDK's loop.
    static func decisionBody(round: Int, index: Int) throws -> Data {
        var context = context(index: index)
        context["fs_client"] = "swift-linux"
        context["fs_version"] = "0.1.0"
        let body: [String: Any] = [
            "visitorId": visitorId(round: round, index: index), "anonymousId": NSNull(),
            "trigger_hit": false, "visitor_consent": true, "context": context,
        ]
        return try JSONSerialization.data(withJSONObject: body)
    }

    static func visitorId(round: Int, index: Int) -> String {
        "visitor-\(round)-\(index)"
    }

    /// The id of returning visitor `index` (`ServerSession.Visitors.returningReadingOnly`).
    static func returningVisitorId(_ index: Int) -> String {
        "returning-\(index)"
    }

    /// A context that passes about half the added campaigns' rules, varying by visitor.
    static func context(index: Int) -> [String: Any] {
        [
            "country": ["fr", "de", "us", "it"][index % 4],
            "age": 16 + index % 40,
            "plan": ["free", "pro", "enterprise"][index % 3],
            "device": index % 2 == 0 ? "iphone" : "desktop",
            "visits": index % 60,
            "isVip": index % 5 == 0,
        ]
    }

    /// The bucketing decisions of a round's visitors, as the engine makes them, spread over the
    /// same 64 tasks as the SDK's loop (with the context keys the SDK adds).
    func decideRound(_ round: Int) async {
        await forEachVisitor { index in
            var context = Self.context(index: index).compactMapValues(FSJSONValue.init(any:))
            context["fs_all_users"] = .string("")
            context["fs_client"] = .string("swift-linux")
            blackHole(file.decide(visitorId: Self.visitorId(round: round, index: index), context: context, history: [:]))
        }
    }
}

/// Runs `body` for each visitor index of a round, 64 at a time.
func forEachVisitor(_ body: @escaping @Sendable (Int) async -> Void) async {
    await withTaskGroup(of: Void.self) { group in
        let next = Locked(0)
        for _ in 0..<ServerLoop.concurrency {
            group.addTask {
                while true {
                    let index = next.withLock { value -> Int in
                        defer { value += 1 }
                        return value
                    }
                    guard index < ServerLoop.visitorsPerRound else { return }
                    await body(index)
                }
            }
        }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
}

private func XCTUnwrapDictionary(_ value: Any) throws -> [String: Any] {
    guard let dictionary = value as? [String: Any] else { throw FixtureError(description: "not a JSON object") }
    return dictionary
}

extension FSJSONValue {
    /// A context value as the app gives it.
    init?(any value: Any) {
        switch value {
        case let string as String: self = .string(string)
        case let bool as Bool: self = .bool(bool)
        case let int as Int: self = .int(Int64(int))
        case let double as Double: self = .double(double)
        default: return nil
        }
    }
}

/// An SDK instance serving rounds of visitors against the local server, on a store of its own.
final class ServerSession: Sendable {
    enum Mode { case bucketing, decisionAPI }

    /// Who a round's requests are for.
    enum Visitors: Sendable {
        /// Each request a visitor never seen, with an awaited event (issue 19's loop).
        case new
        /// Each request one of `ServerLoop.returningVisitors` visitors served once before the
        /// measurement, fetched and read only (issue 46: a server's usual page).
        case returningReadingOnly
    }

    let server: LocalFlagshipServer
    let directory: TemporaryDirectory
    let flagship: Flagship
    /// The PostgreSQL store, when the session runs on one.
    let store: FlagshipPostgresStore?
    let visitors: Visitors
    private let round = Locked(0)
    private let failures = Locked<String?>(nil)

    var failure: String? { failures.withLock { $0 } }

    private init(server: LocalFlagshipServer, directory: TemporaryDirectory, flagship: Flagship, store: FlagshipPostgresStore?,
                 visitors: Visitors) {
        self.server = server
        self.store = store
        self.directory = directory
        self.flagship = flagship
        self.visitors = visitors
    }

    /// Starts the SDK on a SQLite file of its own, or with `postgres`, on a new database there.
    static func start(_ mode: Mode, fixture: ServerLoopFixture, into box: Box<ServerSession>,
                      postgres: TemporaryPostgres? = nil, provenance: Bool = true,
                      transport: (any FSHTTPTransport)? = nil, visitors: Visitors = .new) async throws -> ServerSession {
        let server = LocalFlagshipServer(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey)
        try server.setBucketingFile(fixture.json)
        if mode == .decisionAPI { server.decision = .bucketing }
        try server.start()
        let directory = try TemporaryDirectory()
        var builder = FSConfigBuilder()
        builder = mode == .bucketing ? builder.Bucketing().withBucketingBaseURL(server.bucketingBaseURL) : builder.DecisionApi()
        builder = builder
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.url.appendingPathComponent("flagship.sqlite"))
            .withLogLevel(.NONE)
            .withDecisionProvenance(provenance)
        if let transport { builder = builder.withHTTPTransport(transport) }
        var store: FlagshipPostgresStore?
        var database: String?
        if let postgres {
            let created = try postgres.createDatabase("server_loop")
            database = created
            let shared = FlagshipPostgresStore(.init(host: postgres.host, port: postgres.port, username: postgres.username,
                                                     password: postgres.password, database: created))
            try await shared.prepare()
            builder = builder.withPostgresStore(shared)
            store = shared
        }
        let flagship = Flagship.sharedInstance
        flagship.start(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey, config: builder.build())
        let session = ServerSession(server: server, directory: directory, flagship: flagship, store: store, visitors: visitors)
        if visitors == .returningReadingOnly {
            // Each returning visitor served once as a new one, and what that sent delivered:
            // their consent and exposures are known before the measurement.
            await session.introduceReturningVisitors()
            await flagship.waitUntilTrackingIsIdle()
        }
        if let postgres, let database {
            // Steady state, as a running fleet has it: a round served, then the statistics that
            // autovacuum gathers within its first minute (the migration asks it to analyze the hits
            // table after every thousand changes). Without them the planner has no idea how many
            // rows wait, and a claim may sort all of them.
            await session.serveRound()
            try postgres.psql(database, "ANALYZE flagship.hits; ANALYZE flagship.visitors")
        }
        box.value = session
        return session
    }

    /// A round: each visitor built with its context, fetched, three flags read with their
    /// exposure; for new visitors, one event awaited (its commit).
    func serveRound() async {
        let round = round.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        await forEachVisitor { [self] index in
            switch visitors {
            case .new:
                await request(ServerLoopFixture.visitorId(round: round, index: index), index: index, sendingEvent: true)
            case .returningReadingOnly:
                let returning = index % ServerLoop.returningVisitors
                await request(ServerLoopFixture.returningVisitorId(returning), index: returning, sendingEvent: false)
            }
        }
    }

    /// The returning visitors' first requests, as new visitors (not measured).
    private func introduceReturningVisitors() async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<ServerLoop.returningVisitors {
                group.addTask { [self] in
                    await request(ServerLoopFixture.returningVisitorId(index), index: index, sendingEvent: true)
                }
            }
        }
    }

    /// One request: the visitor built with the context of `index`, fetched, three flags read with
    /// their exposure and, `sendingEvent`, one event awaited.
    private func request(_ visitorId: String, index: Int, sendingEvent: Bool) async {
        let visitor = await flagship.newVisitor(visitorId: visitorId, hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ServerLoopFixture.context(index: index))
            .buildAsync()
        do {
            try await visitor.fetchFlags()
            for key in ServerLoopFixture.flagKeys {
                blackHole(visitor.getFlag(key: key).value(defaultValue: "none"))
            }
            if sendingEvent {
                try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "purchase"))
            }
        } catch {
            failures.withLock { $0 = $0 ?? "\(error)" }
        }
    }

    /// The benchmark's rounds: each one's rate, then whether the run lost anything.
    ///
    /// A round of returning visitors must cost the platform one decision request per visitor and
    /// nothing else (their consent and exposures were reported once): otherwise the benchmark
    /// reports an error instead of its figures.
    func serveRounds(_ benchmark: Benchmark) async {
        for _ in benchmark.scaledIterations {
            let before = server.totals
            let elapsed = await measure(benchmark) { await serveRound() }
            benchmark.measurement(visitorsPerSecond, rate(ServerLoop.visitorsPerRound, elapsed))
            let after = server.totals
            if visitors == .returningReadingOnly,
               after != ReceivedTotals(requests: before.requests + ServerLoop.visitorsPerRound, hits: before.hits, activates: before.activates) {
                benchmark.error("a round of returning visitors sent \(after.requests - before.requests) requests for "
                                + "\(ServerLoop.visitorsPerRound) visitors, \(after.hits - before.hits) hits, "
                                + "\(after.activates - before.activates) activates")
            }
        }
        if let failure { benchmark.error(failure) }
        await checkNothingWasLost(benchmark)
    }

    /// A rate bought by dropping hits would mean nothing: the run fails if the hit cache evicted
    /// any (its cap reached while the sender fell behind) or the SDK counted any as lost. How
    /// much of what the run produced the sender delivered meanwhile is reported beside the rate.
    func checkNothingWasLost(_ benchmark: Benchmark) async {
        guard let statistics = await flagship.trackingStatistics() else { return }
        let produced = statistics.delivered + statistics.waiting
        if produced > 0 { benchmark.measurement(deliveredPercent, statistics.delivered * 100 / produced) }
        if statistics.evicted > 0 || statistics.lost > 0 {
            benchmark.error("hits evicted from the cache: \(statistics.evicted), lost: \(statistics.lost) (delivered \(statistics.delivered), waiting \(statistics.waiting))")
        }
    }

    func stop() async {
        await flagship.close()
        await store?.close()
        server.stop()
        directory.remove()
    }
}

/// The decision requests of the Decision API loop, sent by an HTTP client alone to the same local
/// server: the same body the SDK sends (visitor id, context, consent), 64 at a time. The floor of
/// the SDK's loop through URLSession, or through async-http-client (a client on the singleton
/// event loop group, as the SDK's `AsyncHTTPClientTransport()` makes).
final class RawDecisionPoster: Sendable {
    enum Client: Sendable {
        case urlSession(URLSession)
        case asyncHTTPClient(HTTPClient)
    }

    let server: LocalFlagshipServer
    private let client: Client
    private let url: URL
    private let round = Locked(0)
    private let failures = Locked<String?>(nil)

    var failure: String? { failures.withLock { $0 } }

    init(fixture: ServerLoopFixture, asyncHTTPClient: Bool) throws {
        server = LocalFlagshipServer(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey)
        try server.setBucketingFile(fixture.json)
        server.decision = .bucketing
        try server.start()
        if asyncHTTPClient {
            client = .asyncHTTPClient(HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                                                 configuration: HTTPClient.Configuration(redirectConfiguration: .disallow)))
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            client = .urlSession(URLSession(configuration: configuration))
        }
        url = server.decisionBaseURL.appendingPathComponent(ServerLoop.envId).appendingPathComponent("campaigns")
    }

    func postRound() async {
        let round = round.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        await forEachVisitor { [self] index in
            do {
                let answer = try await post(try ServerLoopFixture.decisionBody(round: round, index: index))
                blackHole(try JSONSerialization.jsonObject(with: answer))
            } catch {
                failures.withLock { $0 = $0 ?? "\(error)" }
            }
        }
    }

    /// One decision POST; the answer's body, or an error for a status other than 200.
    private func post(_ body: Data) async throws -> Data {
        switch client {
        case .urlSession(let session):
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(ServerLoop.apiKey, forHTTPHeaderField: "x-api-key")
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 else { throw FixtureError(description: "status \(status)") }
            return data
        case .asyncHTTPClient(let client):
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: body))
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "x-api-key", value: ServerLoop.apiKey)
            let response = try await client.execute(request, timeout: .seconds(10))
            let data = try await response.body.collect(upTo: 10 * 1024 * 1024)
            guard response.status.code == 200 else { throw FixtureError(description: "status \(response.status.code)") }
            return Data(data.readableBytesView)
        }
    }

    func stop() async {
        switch client {
        case .urlSession(let session): session.invalidateAndCancel()
        case .asyncHTTPClient(let client): try? await client.shutdown()
        }
        server.stop()
    }
}

/// The rows the SDK's loop leaves per visitor, written with the SQLite C API: a visitor row and
/// six hit rows (consent, segment, three activates, the event), one transaction per 64 visitors,
/// on the same schema and settings (WAL, `synchronous = NORMAL`).
///
/// `delivering`: the floor of the whole store work of the loop, not only its inserts. The file is
/// made by the SDK itself (every migration, every index), and after each transaction of inserts
/// the rows are claimed and deleted as the sender does once the server took them: pages of 100
/// activates and 500 hits, a transaction to claim each page (`UPDATE … RETURNING`) and one to
/// delete it.
final class RawServerRows: @unchecked Sendable {
    // `@unchecked`: used by one benchmark at a time, from one task.
    private let directory: TemporaryDirectory
    /// Made for its schema; written through `handle`.
    private let schema: AnyObject
    private let handle: OpaquePointer
    private let delivering: Bool
    private var insertVisitor: OpaquePointer?
    private var insertHit: OpaquePointer?
    private var claim: OpaquePointer?
    private var delete: OpaquePointer?
    private let visitorDocument: String
    private let hitDocument: String

    init(delivering: Bool = false) throws {
        directory = try TemporaryDirectory()
        self.delivering = delivering
        let path: String
        if delivering {
            // The SDK's own file: the schema of every migration, opened (and left open, idle) by its cache.
            schema = try FSDefaultCacheVisitor(envId: ServerLoop.envId, cacheDirectory: directory.url)
            path = directory.url.appendingPathComponent("flagship-\(ServerLoop.envId).sqlite").path
        } else {
            path = directory.url.appendingPathComponent("raw.sqlite").path
            schema = try RawHitTable(path: path)
        }
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            throw FixtureError(description: "cannot open \(path)")
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, 5_000)
        sqlite3_exec(handle, """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS visitors (
                visitor_id TEXT NOT NULL PRIMARY KEY, anonymous_id TEXT, consent INTEGER NOT NULL CHECK (consent IN (0, 1)),
                document TEXT NOT NULL CHECK (json_valid(document)), updated_at INTEGER NOT NULL);
            """, nil, nil, nil)
        sqlite3_prepare_v2(handle, """
            INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at) VALUES (?, NULL, 1, ?, ?)
            ON CONFLICT (visitor_id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
            """, -1, &insertVisitor, nil)
        sqlite3_prepare_v2(handle, """
            INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts) VALUES (?, ?, ?, ?, ?, ?, 0)
            """, -1, &insertHit, nil)
        sqlite3_prepare_v2(handle, """
            UPDATE hits SET lease_owner = 'raw', lease_until = ?1
            WHERE rowid IN (SELECT rowid FROM hits WHERE (type = 'ACTIVATE') = ?2 AND (lease_until IS NULL OR lease_until <= ?3)
                            ORDER BY created_at, rowid LIMIT ?4)
            RETURNING id
            """, -1, &claim, nil)
        sqlite3_prepare_v2(handle, "DELETE FROM hits WHERE id = ?", -1, &delete, nil)
        // Documents of the sizes the SDK writes: a visitor with two campaigns, a hit.
        visitorDocument = #"{"data":{"anonymousId":null,"assignmentsHistory":{"vg-checkout-button-everyone":"v-checkout-button-blue","vg-extra-0":"v-extra-0-a"},"campaigns":[{"activated":false,"campaignId":"c-checkout-button","flags":{"btnColor":"blue"},"isReference":true,"type":"ab","variationGroupId":"vg-checkout-button-everyone","variationId":"v-checkout-button-blue"},{"activated":false,"campaignId":"c-extra-0","flags":{"extra0":"a"},"isReference":true,"type":"ab","variationGroupId":"vg-extra-0","variationId":"v-extra-0-a"}],"consent":true,"context":{"age":34,"country":"fr","device":"iphone","isVip":false,"plan":"pro","visits":12},"visitorId":"visitor"},"version":1}"#
        hitDocument = #"{"data":{"anonymousId":null,"content":{"cid":"bench_env","ds":"APP","ea":"purchase","ec":"Action Tracking","t":"EVENT","vid":"visitor"},"time":1763700000000,"type":"EVENT","visitorId":"visitor"},"version":1}"#
    }

    func insertRound(_ round: Int, fixture: ServerLoopFixture) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for start in stride(from: 0, to: ServerLoop.visitorsPerRound, by: ServerLoop.concurrency) {
            guard sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { throw FixtureError(description: "BEGIN failed") }
            for index in start..<min(start + ServerLoop.concurrency, ServerLoop.visitorsPerRound) {
                let visitorId = ServerLoopFixture.visitorId(round: round, index: index)
                bind(insertVisitor, 1, visitorId)
                bind(insertVisitor, 2, visitorDocument)
                sqlite3_bind_int64(insertVisitor, 3, now)
                try step(insertVisitor)
                for (number, type) in ["EVENT", "SEGMENT", "ACTIVATE", "ACTIVATE", "ACTIVATE", "EVENT"].enumerated() {
                    bind(insertHit, 1, "\(visitorId):\(number)")
                    bind(insertHit, 2, visitorId)
                    bind(insertHit, 3, type)
                    sqlite3_bind_int(insertHit, 4, number == 0 ? 1 : 0)
                    bind(insertHit, 5, hitDocument)
                    sqlite3_bind_int64(insertHit, 6, now)
                    try step(insertHit)
                }
            }
            guard sqlite3_exec(handle, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw FixtureError(description: "COMMIT failed") }
            if delivering { try deliverEverything(now: now) }
        }
    }

    /// Claims every row, page by page (activates, then hits), and deletes each page: what the
    /// sender does to rows the server took.
    private func deliverEverything(now: Int64) throws {
        for (activates, pageSize) in [(true, 100), (false, 500)] {
            while true {
                try execute("BEGIN IMMEDIATE")
                sqlite3_bind_int64(claim, 1, now + 60_000)
                sqlite3_bind_int(claim, 2, activates ? 1 : 0)
                sqlite3_bind_int64(claim, 3, now)
                sqlite3_bind_int(claim, 4, Int32(pageSize))
                var ids: [String] = []
                while sqlite3_step(claim) == SQLITE_ROW {
                    ids.append(String(cString: sqlite3_column_text(claim, 0)))
                }
                sqlite3_reset(claim)
                try execute("COMMIT")
                guard !ids.isEmpty else { break }
                try execute("BEGIN IMMEDIATE")
                for id in ids {
                    bind(delete, 1, id)
                    try step(delete)
                }
                try execute("COMMIT")
                if ids.count < pageSize { break }
            }
        }
    }

    private func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw FixtureError(description: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    private func bind(_ statement: OpaquePointer?, _ index: Int32, _ text: String) {
        _ = text.withCString { benchsqlite_bind_text_transient(statement, index, $0, -1) }
    }

    private func step(_ statement: OpaquePointer?) throws {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else {
            throw FixtureError(description: String(cString: sqlite3_errmsg(handle)))
        }
    }

    func remove() {
        sqlite3_finalize(insertVisitor)
        sqlite3_finalize(insertHit)
        sqlite3_finalize(claim)
        sqlite3_finalize(delete)
        sqlite3_close_v2(handle)
        directory.remove()
    }
}
