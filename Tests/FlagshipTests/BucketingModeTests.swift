import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// The SDK in bucketing mode against the local server's bucketing route, on a real store: the
/// stored file first, polling with `If-Modified-Since`, decisions on the device, SEGMENT hits.
final class BucketingModeTests: TrackingTestCase {
    /// A checkout test (50/50, or `greenShare` to green) for everyone, and a VIP toggle.
    static func bucketingFile(greenShare: Int = 50, vipValue: String = "free", enabledXPC: Bool = false) -> Data {
        let file: [String: Any] = [
            "panic": false,
            "accountSettings": ["enabledXPC": enabledXPC],
            "campaigns": [
                [
                    "id": "c_checkout", "name": "Checkout button", "type": "ab", "slug": "checkout",
                    "variationGroups": [[
                        "id": "vg_checkout", "name": "Everyone",
                        "targeting": ["targetingGroups": [["targetings": [["key": "fs_all_users", "operator": "EQUALS", "value": ""]]]]],
                        "variations": [
                            ["id": "v_blue", "name": "Original", "reference": true, "allocation": 100 - greenShare,
                             "modifications": ["type": "FLAG", "value": ["btnColor": "blue"]]],
                            ["id": "v_green", "name": "Green", "allocation": greenShare,
                             "modifications": ["type": "FLAG", "value": ["btnColor": "green"]]],
                        ],
                    ]],
                ],
                [
                    "id": "c_vip", "name": "VIP shipping", "type": "toggle",
                    "variationGroups": [[
                        "id": "vg_vip", "name": "VIPs",
                        "targeting": ["targetingGroups": [["targetings": [["key": "isVip", "operator": "EQUALS", "value": true]]]]],
                        "variations": [
                            ["id": "v_vip", "name": "On", "allocation": 100,
                             "modifications": ["type": "FLAG", "value": ["shipping": vipValue]]],
                        ],
                    ]],
                ],
            ],
        ]
        // A literal of plain values always serializes.
        return try! JSONSerialization.data(withJSONObject: file, options: [.sortedKeys])
    }

    /// A config in bucketing mode against the test's server, with the manual clock.
    private func bucketingBuilder(server: LocalFlagshipServer? = nil, bucketingURL: URL? = nil) -> FSConfigBuilder {
        configBuilder(server: server)
            .Bucketing()
            .withBucketingBaseURL(bucketingURL ?? (server ?? self.server).bucketingBaseURL)
            .withBucketingPollingIntervals(60)
            .withClock(clock)
    }

    /// Moves the clock one polling interval once the poller waits on it: an advance made before
    /// its sleep is armed would be lost. Two waits: the tracking manager's interval and the poller's.
    private func advanceToNextPoll() async throws {
        try await waitForSleepers(2)
        clock.advance(by: 60)
    }

    private func visitor(_ id: String, context: [String: Any] = [:], on flagship: Flagship? = nil) -> FSVisitor {
        (flagship ?? self.flagship).newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: context).build()
    }

    /// The flags a visitor has, as values.
    private func flags(of visitor: FSVisitor) -> [String: FSJSONValue] {
        var flags: [String: FSJSONValue] = [:]
        for key in visitor.getFlags().keys() {
            flags[key] = visitor.flagSnapshot(key).entry?.value
        }
        return flags
    }

    /// What the engine itself decides for a visitor on `file`: the oracle of these tests.
    private func expected(_ file: Data, visitorId: String, context: [String: FSJSONValue] = [:]) throws -> [String: FSJSONValue] {
        let withClient = context.merging(FSVisitor.clientContext) { own, _ in own }
        let autoSet = FlagshipContext.autoSetValues(firstTimeInit: true).merging(withClient) { _, own in own }
        return try BucketingFile(json: file).decide(visitorId: visitorId, context: autoSet, history: [:]).flags
    }

    private func storedFile() throws -> BucketingRecord? {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.bucketing.file(envId: Self.envId) }
    }

    private func bucketingRequests() -> [RecordedRequest] {
        server.received(.bucketing)
    }

    // MARK: Start and the stored file

    func testWithoutAStoredFileTheSDKIsInitializingUntilTheFirstDownloadAndAFetchWaitsForIt() async throws {
        let file = Self.bucketingFile()
        try server.setBucketingFile(file, lastModified: Date(timeIntervalSince1970: 1_763_000_000))
        start(bucketingBuilder())
        let visitor = visitor("alice", context: ["isVip": true])
        try await visitor.fetchFlags()  // made at once: it waits for the first download

        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        XCTAssertEqual(flags(of: visitor), try expected(file, visitorId: "alice", context: ["isVip": .bool(true)]))
        XCTAssertEqual(flags(of: visitor)["shipping"], .string("free"))
        XCTAssertEqual(server.received(.campaigns).count, 0, "bucketing mode asks the Decision API nothing")
        drainCallbacks()
        XCTAssertEqual(sdkStatuses.values, [.SDK_INITIALIZING, .SDK_INITIALIZED])
        // The download decides at once; its copy in the store is written beside it (a busy
        // machine can take a moment to).
        try await waitUntil("the downloaded file is stored") { try self.storedFile() != nil }
        let stored = try XCTUnwrap(try storedFile())
        XCTAssertEqual(Data(stored.document.utf8), file)
        XCTAssertEqual(stored.lastModified, "Thu, 13 Nov 2025 02:13:20 GMT")
        XCTAssertEqual(bucketingRequests().first?.headers["x-api-key"], nil, "the CDN gets no API key")
    }

    func testAStoredFileMakesTheSDKReadyAtOnceAndDecidesWithTheServerGone() async throws {
        let file = Self.bucketingFile()
        try await storeThenStopTheServer(file)

        let restart = try await restartOnTheStoredFile("bob", context: ["isVip": true])

        XCTAssertEqual(restart.fetchStatus, .FETCHED)
        XCTAssertEqual(restart.flags, try expected(file, visitorId: "bob", context: ["isVip": .bool(true)]))
        XCTAssertFalse(restart.statuses.contains(.SDK_INITIALIZING))
    }

    /// A first start downloads `file` and stores it; then the server is gone.
    private func storeThenStopTheServer(_ file: Data) async throws {
        try server.setBucketingFile(file)
        start(bucketingBuilder())
        try await visitor("warm-up").fetchFlags()
        await flagship.close()
        server.stop()
    }

    /// Starts on the stored file with the server gone: ready when start returns; the flags a
    /// visitor gets, the fetch's status, the statuses of the start and its line about the stored file.
    private func restartOnTheStoredFile(_ visitorId: String, context: [String: Any]) async throws
        -> (flags: [String: FSJSONValue], fetchStatus: FSFetchStatus, statuses: [FSSdkStatus], line: String) {
        let restarted = Flagship()
        let statuses = Collected<FSSdkStatus>()
        restarted.start(envId: Self.envId, apiKey: Self.apiKey,
                        config: bucketingBuilder(bucketingURL: Self.deadURL).withOnSdkStatusChanged { statuses.append($0) }.build())
        XCTAssertEqual(restarted.getStatus(), .SDK_INITIALIZED, "ready when start returns")
        let visitor = visitor(visitorId, context: context, on: restarted)
        try await visitor.fetchFlags()
        let flags = flags(of: visitor)
        await restarted.close()
        restarted.currentRuntime?.callbacks.sync {}
        let line = log.messages(at: .info).last { $0.hasPrefix("Bucketing file from the store") } ?? "none"
        return (flags, visitor.fetchStatus, statuses.values, line)
    }

    private func withStore(_ body: (FlagshipDatabase) throws -> Void) throws {
        let store = try FlagshipDatabase.open(at: StoreLocation.databaseFile(envId: Self.envId, in: directory.url))
        defer { store.close() }
        try body(store)
    }

    private func storedCompiledForm() throws -> [UInt8]? {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.bucketing.compiledFile(envId: Self.envId) }?.compiled
    }

    func testARestartDecidesFromTheCompiledFormAndReadsTheJSONWhenItIsMissingDamagedOrStale() async throws {
        let file = Self.bucketingFile()
        try await storeThenStopTheServer(file)
        let compiled = try XCTUnwrap(try storedCompiledForm(), "written with the download")

        // From the compiled form: no JSON read.
        var restart = try await restartOnTheStoredFile("bob", context: ["isVip": true])
        XCTAssertEqual(restart.flags, try expected(file, visitorId: "bob", context: ["isVip": .bool(true)]))
        XCTAssertTrue(restart.line.hasSuffix("compiled)"), restart.line)

        // Missing (a store written by an older SDK): the JSON is read, and the form written again.
        try withStore { store in _ = try store.write { try $0.execute("UPDATE bucketing SET compiled = NULL") } }
        restart = try await restartOnTheStoredFile("carol", context: ["isVip": true])
        XCTAssertEqual(restart.flags, try expected(file, visitorId: "carol", context: ["isVip": .bool(true)]))
        XCTAssertTrue(restart.line.hasSuffix("read from its JSON)"), restart.line)
        XCTAssertEqual(try storedCompiledForm(), compiled, "compiled again for the next start")

        // Damaged, or malformed past a good checksum (a byte after the file: a blob written wrong,
        // refused by the start's check of every block): refused whole with a warning saying why,
        // the JSON read, the form written again.
        var damaged = compiled
        damaged[damaged.count / 2] ^= 0xFF
        let refusals = [
            (damaged, "dave", "its checksum does not match: damaged or cut"),
            (CompiledBucketingFile.withChecksum(compiled + [0]), "dina", "it cannot be read: bytes after the file at byte \(compiled.count)"),
        ]
        for (blob, visitorId, reason) in refusals {
            try withStore { store in _ = try store.write { try $0.execute("UPDATE bucketing SET compiled = ?", [.blob(blob)]) } }
            restart = try await restartOnTheStoredFile(visitorId, context: [:])
            XCTAssertEqual(restart.flags, try expected(file, visitorId: visitorId))
            XCTAssertTrue(restart.line.hasSuffix("read from its JSON)"), restart.line)
            XCTAssertTrue(log.messages(at: .warning).contains { $0.contains("compiled form is unusable (\(reason))") },
                          "\(log.messages(at: .warning))")
            XCTAssertEqual(try storedCompiledForm(), compiled)
        }

        // Of an older format (written by the SDK before an upgrade): read from the JSON and
        // compiled again, said at info level, not as damage.
        var older = compiled
        older[4] = CompiledBucketingFile.format - 1
        try withStore { store in _ = try store.write { try $0.execute("UPDATE bucketing SET compiled = ?", [.blob(older)]) } }
        func unusableLines() -> Int { log.messages(at: .warning).filter { $0.contains("compiled form is unusable") }.count }
        let warningsBefore = unusableLines()
        restart = try await restartOnTheStoredFile("dora", context: [:])
        XCTAssertEqual(restart.flags, try expected(file, visitorId: "dora"))
        XCTAssertTrue(restart.line.hasSuffix("read from its JSON)"), restart.line)
        XCTAssertEqual(unusableLines(), warningsBefore, "\(log.messages(at: .warning))")
        XCTAssertTrue(log.messages(at: .info).contains {
            $0.contains("compiled by an older SDK (compiled in format \(CompiledBucketingFile.format - 1), this SDK reads format \(CompiledBucketingFile.format))")
        }, "\(log.messages(at: .info))")
        XCTAssertEqual(try storedCompiledForm(), compiled)

        // Stale: a document edited by hand is what decides, never the form of the file before it.
        let edited = Self.bucketingFile(vipValue: "express")
        try withStore { store in
            _ = try store.write { try $0.execute("UPDATE bucketing SET document = ?", [.text(String(decoding: edited, as: UTF8.self))]) }
        }
        restart = try await restartOnTheStoredFile("erin", context: ["isVip": true])
        XCTAssertEqual(restart.flags["shipping"], .string("express"))
        XCTAssertEqual(restart.flags, try expected(edited, visitorId: "erin", context: ["isVip": .bool(true)]))
        XCTAssertTrue(restart.line.hasSuffix("read from its JSON)"), restart.line)
        restart = try await restartOnTheStoredFile("frank", context: ["isVip": true])
        XCTAssertEqual(restart.flags["shipping"], .string("express"))
        XCTAssertTrue(restart.line.hasSuffix("compiled)"), restart.line)
    }

    func testAStoredFileOverALoweredLimitIsRefusedWithoutBeingRead() async throws {
        let file = BucketingJSON.file((1...20).map { number in
            BucketingJSON.campaign("c\(number)", BucketingJSON.group("g\(number)", BucketingJSON.variation("v\(number)", 100, flags: #"{"k": 1}"#)))
        })
        XCTAssertGreaterThan(file.count, 2_048)
        try await storeThenStopTheServer(file)

        let restarted = Flagship()
        restarted.start(envId: Self.envId, apiKey: Self.apiKey,
                        config: bucketingBuilder(bucketingURL: Self.deadURL).withBucketingFileMaximumBytes(2_048).build())
        XCTAssertEqual(restarted.getStatus(), .SDK_INITIALIZING, "no file to decide from")
        await restarted.close()
        XCTAssertTrue(log.messages(at: .error).contains {
            $0.contains("The stored bucketing file is unusable (The bucketing file is unusable: the document is \(file.count) bytes, over the 2048 bytes")
        }, "\(log.messages(at: .error))")
    }

    func testWithNoFileAnywhereAFetchFailsClearlyAndTheSDKStaysInitializing() async throws {
        start(bucketingBuilder())  // the server has no bucketing file: 404
        let visitor = visitor("carol")
        do {
            try await visitor.fetchFlags()
            XCTFail("a fetch with no bucketing file must fail")
        } catch let error as FlagshipError where error.code == .fetchFailed {
            let reason = try XCTUnwrap(error.fetchFailure)
            XCTAssertTrue(reason.description.contains("no bucketing file"), "\(reason)")
        }
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZING)
        XCTAssertTrue(log.allText.contains("HTTP status 404"), log.allText)
    }

    /// A fetch that waits for the first download of this start stops when its task is
    /// cancelled, saying so, instead of waiting for the download (held here 60 s by the server).
    func testAFetchWaitingForTheFirstDownloadStopsWhenItsTaskIsCancelled() async throws {
        try server.setBucketingFile(Self.bucketingFile())
        server.injectFault(.latency(.seconds(60)), on: .bucketing)
        start(bucketingBuilder())
        let visitor = visitor("dave")
        let fetch = Task { try await visitor.fetchFlags() }
        try await waitUntil("the fetch waits for the first download") {
            (self.flagship.currentRuntime?.bucketing?.firstAttempt.waiting ?? 0) == 1
        }
        fetch.cancel()
        do {
            try await fetch.value
            XCTFail("a cancelled fetch without a file must fail")
        } catch let error as FlagshipError where error.code == .fetchFailed {
            let reason = try XCTUnwrap(error.fetchFailure)
            XCTAssertTrue(reason.description.contains("cancelled while the first bucketing file downloads"), "\(reason)")
        }
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZING, "the download is still under way")
        server.clearFaults()
    }

    /// A file past the 10 MiB default is refused whole, saying so; with the limit raised it is
    /// taken, stored, and read back from the store at the next start.
    func testAFileOverTheDefaultLimitIsRefusedAndTakenOnceTheLimitIsRaised() async throws {
        var document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Self.bucketingFile()) as? [String: Any])
        document["padding"] = String(repeating: "x", count: 11 * 1024 * 1024)
        let big = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
        try server.setBucketingFile(big)
        start(bucketingBuilder())
        do {
            try await visitor("dan").fetchFlags()
            XCTFail("over 10 MiB: refused")
        } catch FlagshipError.Code.fetchFailed {}
        XCTAssertTrue(log.allText.contains("10485760"), log.allText)
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZING)
        await flagship.close()

        let raised = { self.bucketingBuilder().withBucketingFileMaximumBytes(16 * 1024 * 1024) }
        let second = Flagship()
        second.start(envId: Self.envId, apiKey: Self.apiKey, config: raised().build())
        let visitor = visitor("dan", context: ["isVip": true], on: second)
        try await visitor.fetchFlags()
        XCTAssertEqual(flags(of: visitor)["shipping"], .string("free"))
        try await waitUntil("the big file is stored") { try self.storedFile()?.document.utf8.count == big.count }
        await second.close()
        server.stop()

        let third = Flagship()
        third.start(envId: Self.envId, apiKey: Self.apiKey, config: raised().withBucketingBaseURL(Self.deadURL).build())
        XCTAssertEqual(third.getStatus(), .SDK_INITIALIZED, "the stored file, read with the raised limit")
        await third.close()
    }

    func testALimitUnderOneKibibyteIsIgnored() {
        let config = FSConfigBuilder().withBucketingFileMaximumBytes(100).build()
        XCTAssertEqual(config.bucketingFileMaximumBytes, FlagshipConfig.defaultBucketingFileMaximumBytes)
        XCTAssertEqual(FSConfigBuilder().withBucketingFileMaximumBytes(20_000_000).build().bucketingFileMaximumBytes, 20_000_000)
    }

    // MARK: Polling

    func testPollingSendsIfModifiedSinceA304KeepsTheFileAndANewFileServesTheNextFetch() async throws {
        try server.setBucketingFile(Self.bucketingFile(), lastModified: Date(timeIntervalSince1970: 1_763_000_000))
        start(bucketingBuilder())
        try await waitUntil("the first download") { flagship.getStatus() == .SDK_INITIALIZED }
        XCTAssertNil(bucketingRequests()[0].headers["if-modified-since"])

        try await advanceToNextPoll()
        try await waitUntil("the second download") { bucketingRequests().count == 2 }
        XCTAssertEqual(bucketingRequests()[1].headers["if-modified-since"], "Thu, 13 Nov 2025 02:13:20 GMT")
        try await waitUntil("its answer") { bucketingRequests()[1].status == 304 }
        let vip = visitor("dave", context: ["isVip": true])
        try await vip.fetchFlags()
        XCTAssertEqual(flags(of: vip)["shipping"], .string("free"))

        let newer = Self.bucketingFile(vipValue: "express")
        try server.setBucketingFile(newer, lastModified: Date(timeIntervalSince1970: 1_763_000_600))
        try await advanceToNextPoll()
        try await waitUntil("the new file in the store") { try self.storedFile()?.lastModified == "Thu, 13 Nov 2025 02:23:20 GMT" }
        try await waitUntil("the new file in use") { flagship.currentRuntime?.bucketing?.file?.campaignCount == 2 && bucketingRequests().count == 3 }
        try await vip.fetchFlags()
        XCTAssertEqual(flags(of: vip)["shipping"], .string("express"))
        XCTAssertEqual(Data(try XCTUnwrap(try storedFile()).document.utf8), newer)
    }

    /// An outage of the bucketing endpoint is one warning when it starts and one when a download
    /// works again, not a line per poll; the failed polls between are debug lines.
    func testFailedDownloadsAreSaidOnceWhenTheyStartAndOnceWhenTheyEnd() async throws {
        try server.setBucketingFile(Self.bucketingFile())
        start(bucketingBuilder())
        try await waitUntil("the first download") { flagship.getStatus() == .SDK_INITIALIZED }
        let outage = server.injectFault(.status(503), on: .bucketing)
        for poll in 2...4 {
            try await advanceToNextPoll()
            try await waitUntil("download \(poll)") { bucketingRequests().count == poll && bucketingRequests()[poll - 1].status == 503 }
            try await waitForSleepers(2)
        }
        server.removeFault(outage)
        try await advanceToNextPoll()
        try await waitUntil("download 5") { bucketingRequests().count == 5 && bucketingRequests()[4].status != nil }
        try await waitForSleepers(2)

        let said = log.messages(at: .warning).filter { $0.hasPrefix("Bucketing file") }
        XCTAssertEqual(said, [
            "Bucketing file not downloaded (HTTP status 503); the current file is kept. Tried again every 60 s; said again once downloaded",
            "Bucketing file downloaded again, after 3 failed attempt(s) over 180 s",
        ])
        XCTAssertEqual(log.messages(at: .debug).filter { $0.hasPrefix("Bucketing file not downloaded") }.count, 2)
    }

    func testAnUnusableDownloadNeverReplacesTheGoodFileInMemoryOrOnDisk() async throws {
        let good = Self.bucketingFile()
        try server.setBucketingFile(good)
        start(bucketingBuilder())
        try await waitUntil("the first download") { flagship.getStatus() == .SDK_INITIALIZED }

        let bad: [FaultKind] = [.malformedBody(.notJSON), .malformedBody(.truncatedJSON),
                                .malformedBody(.custom(Data(#"{"campaigns": 5}"#.utf8))), .status(500)]
        for (index, fault) in bad.enumerated() {
            let id = server.injectFault(fault, on: .bucketing)
            try await advanceToNextPoll()
            try await waitUntil("download \(index + 2)") { bucketingRequests().count == index + 2 && bucketingRequests()[index + 1].status != nil }
            try await waitForSleepers(2)  // the poller waits again: the answer was read and judged
            server.removeFault(id)
        }
        let visitor = visitor("erin", context: ["isVip": true])
        try await visitor.fetchFlags()
        XCTAssertEqual(flags(of: visitor), try expected(good, visitorId: "erin", context: ["isVip": .bool(true)]))
        XCTAssertEqual(Data(try XCTUnwrap(try storedFile()).document.utf8), good)
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZED)
        XCTAssertTrue(log.allText.contains("The downloaded bucketing file is unusable"), log.allText)
        XCTAssertTrue(log.allText.contains("HTTP status 500"), log.allText)
    }

    func testClosingStopsThePolling() async throws {
        try server.setBucketingFile(Self.bucketingFile())
        start(bucketingBuilder())
        try await waitUntil("the first download") { flagship.getStatus() == .SDK_INITIALIZED }
        await flagship.close()
        clock.advance(by: 600)
        try await Task.sleep(nanoseconds: 50_000_000)
        XCTAssertEqual(bucketingRequests().count, 1)
    }

    // MARK: Panic, hits, continuity

    func testAPanicFileGivesPanicDefaultsAndNoSegmentUntilTheNextFile() async throws {
        try server.setBucketingFile(Data(#"{"panic": true}"#.utf8))
        start(bucketingBuilder())
        try await waitUntil("the panic file") { flagship.getStatus() == .SDK_PANIC }
        let visitor = visitor("frank", context: ["isVip": true])
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .PANIC)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "none")

        try server.setBucketingFile(Self.bucketingFile(), lastModified: Date().addingTimeInterval(60))
        try await advanceToNextPoll()
        try await waitUntil("the file after the panic") { flagship.getStatus() == .SDK_INITIALIZED }
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        await flagship.waitUntilTrackingIsIdle()
        let segments = server.hits.filter { $0["t"] == "SEGMENT" }
        XCTAssertEqual(segments.count, 1, "a segment for the fetch after the panic only")
    }

    func testEachBucketingFetchSendsASegmentHitWithTheContextAsStrings() async throws {
        try server.setBucketingFile(Self.bucketingFile())
        start(bucketingBuilder())
        let visitor = visitor("gina", context: ["isVip": true, "age": 32, "plan": "pro", "ratio": 2.5])
        try await visitor.fetchFlags()
        await flagship.waitUntilTrackingIsIdle()
        let segments = server.hits.filter { $0["t"] == "SEGMENT" }
        XCTAssertEqual(segments.count, 1)
        let segment = try XCTUnwrap(segments.first)
        XCTAssertEqual(segment["vid"], "gina")
        XCTAssertEqual(segment["cid"], .string(Self.envId))
        XCTAssertEqual(segment["s"]?["isVip"], "true")
        XCTAssertEqual(segment["s"]?["age"], "32")
        XCTAssertEqual(segment["s"]?["plan"], "pro")
        XCTAssertEqual(segment["s"]?["ratio"], "2.5")
    }

    func testExperienceContinuityFollowsTheFilesAccountSettings() async throws {
        try server.setBucketingFile(Self.bucketingFile(enabledXPC: false))
        start(bucketingBuilder())
        try await waitUntil("the first download") { flagship.getStatus() == .SDK_INITIALIZED }
        let visitor = visitor("anon-1")
        visitor.authenticate(visitorId: "user-1")
        XCTAssertEqual(visitor.visitorId, "anon-1")
        XCTAssertTrue(log.allText.contains("experience continuity is not enabled"), log.allText)

        try server.setBucketingFile(Self.bucketingFile(enabledXPC: true), lastModified: Date().addingTimeInterval(60))
        try await advanceToNextPoll()
        try await waitUntil("the file enabling continuity") {
            flagship.currentRuntime?.bucketing?.file?.accountSettings.enabledXPC == true
        }
        visitor.authenticate(visitorId: "user-1")
        XCTAssertEqual(visitor.visitorId, "user-1")
        XCTAssertEqual(visitor.anonymousId, "anon-1")
    }

    // MARK: Assignment history

    func testAVisitorKeepsItsVariationWhenAllocationsChangeAndANewVisitorDoesNot() async throws {
        let fiftyFifty = Self.bucketingFile(greenShare: 50)
        let parsed = try BucketingFile(json: fiftyFifty)
        // Two visitors that land in green on the 50/50 file.
        let greens = (0..<200).map { "visitor-\($0)" }.filter {
            parsed.decide(visitorId: $0, context: [:], history: [:]).flags["btnColor"] == .string("green")
        }.prefix(2)
        XCTAssertEqual(greens.count, 2)
        let (seen, unseen) = (greens.first!, greens.last!)

        try server.setBucketingFile(fiftyFifty, lastModified: Date(timeIntervalSince1970: 1_763_000_000))
        start(bucketingBuilder())
        try await visitor(seen).fetchFlags()  // its history (vg_checkout → v_green) is cached

        // All new traffic to blue: green stays in the group, with no allocation.
        try server.setBucketingFile(Self.bucketingFile(greenShare: 0), lastModified: Date(timeIntervalSince1970: 1_763_000_600))
        try await advanceToNextPoll()
        try await waitUntil("the new allocations in use") { try self.storedFile()?.lastModified == "Thu, 13 Nov 2025 02:23:20 GMT" }
        try await waitUntil("the new file downloaded") { bucketingRequests().count == 2 && bucketingRequests()[1].status == 200 }
        try await waitForSleepers(2)  // the poller waits again: the new file is in memory too

        let returning = visitor(seen)  // a new instance: the history comes from the visitor cache
        try await returning.fetchFlags()
        XCTAssertEqual(flags(of: returning)["btnColor"], .string("green"))
        let newcomer = visitor(unseen)
        try await newcomer.fetchFlags()
        XCTAssertEqual(flags(of: newcomer)["btnColor"], .string("blue"))
    }

    // MARK: Both modes agree

    func testAPIModeAgainstTheLocalServerAndBucketingModeGiveTheSameFlagsFor1000Visitors() async throws {
        let file = Self.bucketingFile(greenShare: 34)
        try server.setBucketingFile(file)
        server.decision = .bucketing
        let contexts: [(String, [String: Any])] = (0..<1000).map { ("visitor-\($0)", ["isVip": $0 % 3 == 0, "age": $0 % 90]) }
        let quietTracking = FSTrackingManagerConfig(poolMaxSize: 500, batchIntervalTimer: 60)

        flagship.start(envId: Self.envId, apiKey: Self.apiKey,
                       config: configBuilder().withTrackingManagerConfig(quietTracking).build())
        var apiFlags: [String: [String: FSJSONValue]] = [:]
        for (id, context) in contexts {
            let visitor = visitor(id, context: context)
            try await visitor.fetchFlags()
            apiFlags[id] = flags(of: visitor)
        }
        await flagship.close()
        XCTAssertEqual(server.received(.campaigns).count, 1000)

        let bucketingDirectory = try TemporaryDirectory()
        defer { bucketingDirectory.remove() }
        let bucketing = Flagship()
        bucketing.start(envId: Self.envId, apiKey: Self.apiKey,
                        config: bucketingBuilder().withCacheDirectory(bucketingDirectory.url)
                            .withTrackingManagerConfig(quietTracking).build())
        var mismatches: [String] = []
        for (id, context) in contexts {
            let visitor = visitor(id, context: context, on: bucketing)
            try await visitor.fetchFlags()
            if flags(of: visitor) != apiFlags[id] { mismatches.append(id) }
        }
        await bucketing.close()
        XCTAssertEqual(mismatches, [])
        XCTAssertEqual(Set(apiFlags.values.compactMap { $0["btnColor"] }), [.string("blue"), .string("green")])
        XCTAssertEqual(apiFlags.values.filter { $0["shipping"] != nil }.count, 334)
    }
}
