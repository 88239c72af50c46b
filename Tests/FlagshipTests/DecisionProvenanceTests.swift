import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Decision provenance: each bucketing file used is kept by version (the sha256 of its bytes),
/// each assignment is recorded with its version, time and context, each activate with its
/// decision's version; all of it replays, and consent withdrawal erases it.
final class DecisionProvenanceTests: TrackingTestCase {
    private static let half = BucketingModeTests.bucketingFile(greenShare: 50)
    private static let allGreen = BucketingModeTests.bucketingFile(greenShare: 100)

    private func bucketing(_ configure: (FSConfigBuilder) -> FSConfigBuilder = { $0 }) -> FSConfigBuilder {
        configure(configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(3600))
    }

    private func fetched(_ id: String, context: [String: Any] = ["isVip": true], consent: Bool = true) async throws -> FSVisitor {
        let visitor = await flagship.newVisitor(visitorId: id, hasConsented: consent, instanceType: .NEW_INSTANCE)
            .withContext(context: context).buildAsync()
        try await visitor.fetchFlags()
        return visitor
    }

    private func decisions(_ visitorId: String? = nil) throws -> [DecisionRecord] {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { db in
            try visitorId.map { try db.decisions.decisions(visitorId: $0) } ?? db.decisions.page(after: 0, limit: 10_000).decisions.map(\.record)
        }
    }

    private func storedActivates() throws -> [HitRecord] {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.hits.page(limit: 100) }.filter { $0.type == "ACTIVATE" }
    }

    private func versions() throws -> [BucketingFileVersion] {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.bucketingFiles.versions() }
    }

    func testSHA256MatchesTheStandardsVectors() {
        XCTAssertEqual(SHA256.hex(of: ""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(of: "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(of: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "two blocks of padding")
        XCTAssertEqual(SHA256.hex(of: Array(repeating: UInt8(ascii: "a"), count: 1_000_000)),
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// A file of 1 MiB or more has its digest taken on another core while its JSON is parsed
    /// (`BucketingFile.parseAndHash`): the same version and the same parse as a small file's way,
    /// and a broken one refused alike. The digest is Python's `hashlib.sha256` of the same bytes.
    func testALargeFilesVersionTakenBesideItsParseIsItsSHA256() throws {
        let data = Data((#"{"campaigns":[],"pad":""# + String(repeating: "a", count: 1 << 20) + #""}"#).utf8)
        XCTAssertGreaterThanOrEqual(data.count, BucketingFile.hashedBesideTheParseBytes)

        let parsed = try BucketingFile.parse(json: data, maximumBytes: 2 << 20)

        XCTAssertEqual(parsed.version, "9654b08219eb203e42c42fac0a8b2b786f35de36c467b517455efaa89c882bcc")
        XCTAssertEqual(parsed.root, try TolerantJSON(data).value)
        XCTAssertThrowsError(try BucketingFile.parse(json: data.dropLast(2), maximumBytes: 2 << 20)) { error in
            XCTAssertEqual((error as? BucketingFileError)?.reason, "the document (1048599 bytes) is not valid JSON, or is truncated")
        }
    }

    /// Lengths on each side of the padding's edges (55/56 bytes: one block or two; 64: a whole
    /// block and a padding one), read in place (`Data`, an array) and copied (a collection with no
    /// contiguous storage). Each digest is Python's `hashlib.sha256` of bytes `i % 251`.
    func testSHA256AtThePaddingsEdgesWhetherItsBytesAreContiguousOrNot() {
        let expected = [
            55: "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59",
            56: "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562",
            63: "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488",
            64: "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108",
            65: "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781",
            119: "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6",
            120: "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c",
            128: "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5",
            1000: "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d",
        ]
        for (length, digest) in expected {
            let bytes = (0..<length).map { UInt8($0 % 251) }
            XCTAssertEqual(SHA256.hex(of: bytes), digest, "\(length) bytes, an array")
            XCTAssertEqual(SHA256.hex(of: Data(bytes)), digest, "\(length) bytes, Data")
            XCTAssertEqual(SHA256.hex(of: Data(bytes)[1...].prefix(length)), SHA256.hex(of: Array(bytes[1...])), "\(length) bytes, a slice")
            XCTAssertEqual(SHA256.hex(of: bytes.lazy.map { $0 }), digest, "\(length) bytes, not contiguous")
        }
    }

    func testAFetchRecordsEachNewAssignmentWithTheFileVersionTimeAndContext() async throws {
        try server.setBucketingFile(Self.half)
        start(bucketing())
        await flagship.currentRuntime?.bucketing?.poll()
        let visitor = try await fetched("alice", context: ["isVip": true, "plan": "pro"])
        try await visitor.fetchFlags()   // the same assignments: nothing new to record
        await flagship.flushCaches()

        let recorded = try decisions("alice")
        let version = SHA256.hex(of: Self.half)
        XCTAssertEqual(recorded.map(\.variationGroupId), ["vg_checkout", "vg_vip"])
        XCTAssertEqual(recorded.map(\.campaignId), ["c_checkout", "c_vip"])
        XCTAssertEqual(recorded.map(\.variationId), [visitor.getFlag(key: "btnColor").metadata().variationId, "v_vip"])
        XCTAssertEqual(recorded.map(\.reason), ["SPLIT", "TARGETING_MATCH"])
        XCTAssertEqual(Set(recorded.map(\.source)), [.bucketingFile])
        XCTAssertEqual(Set(recorded.map(\.fileVersion)), [version])
        let context = try XCTUnwrap(recorded.first?.context.flatMap { try? FSJSONValue(parsing: Data($0.utf8)) })
        XCTAssertEqual(context["plan"], .string("pro"))
        XCTAssertEqual(context["isVip"], .bool(true))
        XCTAssertNotNil(context["sdk_osName"], "the context sent, predefined keys included")
        XCTAssertEqual(recorded.last?.flags, #"{"shipping":"free"}"#)

        let kept = try versions()
        XCTAssertEqual(kept.map(\.version), [version])
        XCTAssertEqual(kept.first.map { Data($0.document.utf8) }, Self.half, "the file byte for byte")
        XCTAssertEqual(kept.first?.origin, .download)
    }

    func testAnActivateRecordsTheVersionAndTimeOfItsDecision() async throws {
        try server.setBucketingFile(Self.allGreen)
        start(bucketing())
        await flagship.currentRuntime?.bucketing?.poll()
        let visitor = try await fetched("bob")
        // Kept waiting in the store: the events endpoint refuses everything.
        server.injectFault(.status(500), on: .activate)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "green")
        await flagship.flushCaches()

        let activates = try storedActivates()
        XCTAssertEqual(activates.count, 1)
        XCTAssertEqual(activates.first?.fileVersion, SHA256.hex(of: Self.allGreen))
        XCTAssertEqual(activates.first?.decidedAt, try decisions("bob").first?.decidedAt)
    }

    func testANewFileThatMovesNobodyRecordsNothingAndTheOldestVersionsGoBeyondTheLimit() async throws {
        try server.setBucketingFile(Self.half, lastModified: Date(timeIntervalSince1970: 1_000))
        start(bucketing { $0.withDecisionProvenance(keepingFileVersions: 2) })
        await flagship.currentRuntime?.bucketing?.poll()
        _ = try await fetched("carol")
        for (share, second) in [(100, 2_000.0), (0, 3_000.0)] {
            try server.setBucketingFile(BucketingModeTests.bucketingFile(greenShare: share), lastModified: Date(timeIntervalSince1970: second))
            await flagship.currentRuntime?.bucketing?.poll()
        }
        let visitor = try await fetched("carol")   // history keeps carol's variations
        await flagship.flushCaches()
        try await waitUntil("the third version kept") { try self.versions().count == 2 }

        XCTAssertEqual(try decisions("carol").count, 2, "history decided the second fetch: nothing new")
        XCTAssertEqual(try versions().map(\.version).sorted(),
                       [BucketingModeTests.bucketingFile(greenShare: 100), BucketingModeTests.bucketingFile(greenShare: 0)]
                        .map { SHA256.hex(of: $0) }.sorted(), "the newest two")
        XCTAssertNotNil(visitor.getFlag(key: "btnColor").value(defaultValue: nil as String?))
    }

    func testConsentWithdrawalErasesTheVisitorsDecisions() async throws {
        try server.setBucketingFile(Self.half)
        start(bucketing())
        await flagship.currentRuntime?.bucketing?.poll()
        let visitor = try await fetched("dave", context: ["isVip": true, "street": "12 Quiet Lane"])
        _ = try await fetched("erin")
        await flagship.flushCaches()
        XCTAssertEqual(try decisions("dave").count, 2)

        visitor.setConsent(hasConsented: false)
        await flagship.flushCaches()
        try await waitUntil("dave's decisions erased") { try self.decisions("dave").isEmpty }
        XCTAssertEqual(try decisions("erin").count, 2, "another visitor's stay")
        XCTAssertEqual(try storeFilesHolding("12 Quiet Lane"), [], "dave's recorded context gone from the files")
    }

    func testWithoutConsentNothingIsRecorded() async throws {
        try server.setBucketingFile(Self.half)
        start(bucketing())
        await flagship.currentRuntime?.bucketing?.poll()
        _ = try await fetched("frank", consent: false)
        await flagship.flushCaches()
        XCTAssertEqual(try decisions("frank"), [])
    }

    func testProvenanceOffRecordsNeitherDecisionsNorVersions() async throws {
        try server.setBucketingFile(Self.half)
        start(bucketing { $0.withDecisionProvenance(false) })
        await flagship.currentRuntime?.bucketing?.poll()
        let visitor = try await fetched("gina")
        server.injectFault(.status(500), on: .activate)
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        await flagship.flushCaches()

        XCTAssertEqual(try decisions(), [])
        XCTAssertEqual(try versions(), [])
        XCTAssertEqual(try storedActivates().map(\.fileVersion), [nil])
    }

    func testTheDecisionAPIsAssignmentsAreRecordedWithoutAFileVersion() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "hank", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        await flagship.flushCaches()

        let recorded = try decisions("hank")
        XCTAssertEqual(recorded.map(\.variationGroupId), ["vg1", "vg2"])
        XCTAssertEqual(Set(recorded.map(\.source)), [.decisionAPI])
        XCTAssertEqual(recorded.map(\.fileVersion), [nil, nil])
        XCTAssertEqual(recorded.map(\.reason), ["SPLIT", "TARGETING_MATCH"])
    }

    func testTheBootstrapIsKeptByVersionAndItsDecisionsSayBootstrap() async throws {
        start(bucketing().withBucketingBaseURL(TrackingTestCase.deadURL).withBootstrap(bucketingFile: Self.allGreen))
        _ = try await fetched("ivy")
        await flagship.flushCaches()
        try await waitUntil("the bootstrap kept") { try !self.versions().isEmpty }

        XCTAssertEqual(try versions().map(\.origin), [.bootstrap])
        let recorded = try decisions("ivy")
        XCTAssertEqual(Set(recorded.map(\.source)), [.bootstrap])
        XCTAssertEqual(Set(recorded.map(\.reason)), ["STATIC"])
        XCTAssertEqual(Set(recorded.map(\.fileVersion)), [SHA256.hex(of: Self.allGreen)])
    }

    func testEveryRecordedDecisionReplaysInAgreementAndATamperedOneDoesNot() async throws {
        try server.setBucketingFile(Self.half)
        start(bucketing())
        await flagship.currentRuntime?.bucketing?.poll()
        for index in 0..<40 { _ = try await fetched("v\(index)", context: ["isVip": index.isMultiple(of: 2)]) }
        await flagship.flushCaches()

        let store = try inspectStore()
        defer { store.close() }
        func document(_ version: String) throws -> String? {
            try store.read { try $0.bucketingFiles.file(version: version)?.document }
        }
        var replay = DecisionReplay(document: document)
        let recorded = try decisions()
        XCTAssertEqual(recorded.count, 60, "40 checkouts, 20 VIPs")
        XCTAssertEqual(recorded.map { replay.replay($0) }, Array(repeating: .agrees, count: 60))

        var tampered = try XCTUnwrap(recorded.first { $0.variationGroupId == "vg_checkout" })
        let other = tampered.variationId == "v_blue" ? "v_green" : "v_blue"
        let recordedVariation = tampered.variationId
        tampered.variationId = other
        XCTAssertEqual(replay.replay(tampered), .disagrees(variationGroupId: "vg_checkout", variationId: recordedVariation))
        var notVip = try XCTUnwrap(recorded.first { $0.variationGroupId == "vg_vip" })
        notVip.context = #"{"isVip":false}"#
        XCTAssertEqual(replay.replay(notVip), .disagrees(variationGroupId: nil, variationId: nil), "the context no longer targeted")
        var gone = tampered
        gone.fileVersion = String(repeating: "0", count: 64)
        XCTAssertEqual(replay.replay(gone), .notReplayable(.versionNotKept))
        gone.source = .decisionAPI
        XCTAssertEqual(replay.replay(gone), .notReplayable(.decisionAPI))
    }
}
