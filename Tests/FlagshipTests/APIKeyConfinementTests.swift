import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// The API key goes in one place only: the `x-api-key` header of the Decision API's requests
/// (campaigns, activate), to the configured origin. Never in a log line (at any level, message or
/// metadata), never in the store (any table, any free page, the WAL), never in a request body, and
/// never to the events endpoint.
final class APIKeyConfinementTests: TrackingTestCase {
    private var cacheDirectory: URL {
        directory.url.appendingPathComponent("created-by-the-sdk/flagship", isDirectory: true)
    }

    private var databaseFile: URL {
        StoreLocation.databaseFile(envId: Self.envId, in: cacheDirectory)
    }

    private func storeFilesHolding(_ text: String) throws -> [String] {
        try storeFilesHolding(text, cacheDirectory: cacheDirectory)
    }

    func testTheKeyIsOnlyInTheDecisionAPIsHeaderAfterASessionLoggedAtEveryLevel() async throws {
        start(trackingBuilder().withCacheDirectory(cacheDirectory))
        server.injectFault(.status(503), on: .events, share: .next(1))
        server.injectFault(.dropConnection, on: .campaigns, share: .next(1))
        let visitor = await flagship.newVisitor(visitorId: "key-visitor", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["plan": "gold"]).buildAsync()

        try? await visitor.fetchFlags()  // the dropped connection: an error logged
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "banner").value(defaultValue: "none"), "summer")
        try await visitor.sendHit(FSScreen("home"))
        let purchase = FSTransaction(transactionId: "t-1", affiliation: "shop")
        purchase.revenue = 12.5
        try await visitor.sendHit(purchase)
        try await visitor.sendHit(TrackingTestCase.click(1))
        await flagship.waitUntilTrackingIsIdle()
        clock.advance(by: 2)  // the consent hit refused with 503 goes again, and the rest with it
        let hits = try await server.waitForHits(count: 4)
        _ = try await server.waitForActivates(count: 1)
        await flagship.waitUntilTrackingIsIdle()
        visitor.authenticate(visitorId: "key-visitor-logged-in")
        try await visitor.fetchFlags()
        visitor.setConsent(hasConsented: false)
        await flagship.waitUntilTrackingIsIdle()
        let filesWhileOpen = try storeFilesHolding(Self.apiKey)
        await flagship.close()

        XCTAssertEqual(Set(hits.compactMap { $0["t"]?.stringValue }), ["EVENT", "SCREENVIEW", "TRANSACTION"])
        let logged = log.everything
        XCTAssertTrue(logged.contains("503"), "the session met errors, and logged them")
        XCTAssertTrue(logged.contains("debug Flags of visitor 'key-visitor' fetched"), "the lowest level the SDK uses is captured")
        XCTAssertFalse(logged.contains(Self.apiKey), "a log line holds the key")
        XCTAssertEqual(filesWhileOpen, [])
        XCTAssertEqual(try storeFilesHolding(Self.apiKey), [])
        XCTAssertEqual(try storeFilesHolding(SDKRuntime.firstInitKey), ["file"], "the search finds what the store holds")

        let requests = server.received
        for request in requests {
            XCTAssertNil(request.request.body.range(of: Data(Self.apiKey.utf8)), "the body of \(request.route)")
            for field in request.headers.fields where field.name.lowercased() != "x-api-key" {
                XCTAssertFalse(field.value.contains(Self.apiKey), "header \(field.name) of \(request.route)")
            }
        }
        let keyed = requests.filter { $0.headers["x-api-key"] != nil }
        XCTAssertEqual(Set(keyed.map(\.route)), [.campaigns, .activate])
        XCTAssertTrue(keyed.allSatisfy { $0.headers["x-api-key"] == Self.apiKey })
        XCTAssertEqual(requests.filter { $0.route == .events }.filter { $0.headers["x-api-key"] != nil }.count, 0)
    }

    func testTheStoreTheSDKCreatesIsOwnerOnlyWithItsWALAndSharedMemoryFiles() async throws {
        start(trackingBuilder().withCacheDirectory(cacheDirectory))
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        try await visitor.sendHit(TrackingTestCase.click(1))
        await flagship.waitUntilTrackingIsIdle()

        for file in [databaseFile.path, databaseFile.path + "-wal", databaseFile.path + "-shm"] {
            XCTAssertEqual(try permissions(file), "600", file)
        }
        XCTAssertEqual(try permissions(cacheDirectory.path), "700")
        XCTAssertEqual(try permissions(cacheDirectory.deletingLastPathComponent().path), "700")
    }

    /// The permission bits, in octal.
    private func permissions(_ path: String) throws -> String {
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        return String(mode & 0o777, radix: 8)
    }
}
