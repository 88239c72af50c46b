import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `withBootstrap`: a bucketing file given at start decides while the store has none and none
/// is downloaded; a download or a stored file replaces it.
final class BootstrapTests: SDKTestCase {
    private static let allBlue = BucketingModeTests.bucketingFile(greenShare: 0)
    private static let allGreen = BucketingModeTests.bucketingFile(greenShare: 100)

    private func bucketing(_ url: URL) -> FSConfigBuilder {
        configBuilder().Bucketing().withBucketingBaseURL(url).withBucketingPollingIntervals(3600)
    }

    private func fetched(_ id: String, on instance: Flagship? = nil) async throws -> FSVisitor {
        let visitor = await (instance ?? flagship).newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        return visitor
    }

    func testWithNoStoredFileAndNoNetworkTheBootstrapDecidesWithReasonStatic() async throws {
        start(bucketing(TrackingTestCase.deadURL).withBootstrap(bucketingFile: Self.allBlue))
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZED, "ready at start, offline")
        let visitor = try await fetched("alice")
        let details = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        XCTAssertEqual(details.value, "blue")
        XCTAssertEqual(details.reason, .STATIC)
        XCTAssertEqual(details.source, .bootstrap)
        func stored() throws -> BucketingRecord? {
            try inspectStore().read { try $0.bucketing.file(envId: Self.envId) }
        }
        XCTAssertNil(try stored(), "a bootstrap is never stored")
    }

    func testADownloadedFileReplacesTheBootstrap() async throws {
        try server.setBucketingFile(Self.allGreen)
        start(bucketing(server.bucketingBaseURL).withBootstrap(bucketingFile: Self.allBlue))
        await flagship.currentRuntime?.bucketing?.poll()
        let visitor = try await fetched("bob")
        let details = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        XCTAssertEqual(details.value, "green")
        XCTAssertEqual(details.reason, .SPLIT)
        XCTAssertEqual(details.source, .bucketingFile)
    }

    /// A start that downloads `file` and stores it, then closes.
    private func storeDownloaded(_ file: Data) async throws {
        try server.setBucketingFile(file)
        start(bucketing(server.bucketingBaseURL))
        _ = try await fetched("warm-up")
        await flagship.close()
    }

    func testAStoredFileWinsOverTheBootstrap() async throws {
        try await storeDownloaded(Self.allGreen)

        let restarted = Flagship()
        restarted.start(envId: Self.envId, apiKey: Self.apiKey,
                        config: bucketing(TrackingTestCase.deadURL).withBootstrap(bucketingFile: Self.allBlue).build())
        let visitor = try await fetched("carol", on: restarted)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").value, "green")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").reason, .SPLIT)
        await restarted.close()
    }

    /// `withNetworkDisabled` (`flagship fetch --offline`): the bootstrap decides, as online.
    func testWithTheNetworkDisabledTheBootstrapDecides() async throws {
        start(bucketing(TrackingTestCase.deadURL).withBootstrap(bucketingFile: Self.allBlue).withNetworkDisabled())
        let visitor = try await fetched("dora")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").value, "blue")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").reason, .STATIC)
    }

    /// With the network disabled, the file downloaded by an earlier start decides a new visitor.
    func testWithTheNetworkDisabledTheStoredFileDecides() async throws {
        try await storeDownloaded(Self.allGreen)

        let offline = Flagship()
        offline.start(envId: Self.envId, apiKey: Self.apiKey, config: bucketing(server.bucketingBaseURL).withNetworkDisabled().build())
        server.clearReceived()
        let visitor = try await fetched("erin", on: offline)
        await offline.close()

        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").value, "green")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").reason, .SPLIT)
        XCTAssertEqual(server.received.count, 0)
    }

    /// With the network disabled and no file at all, a fetch fails at once: no download can
    /// come to end its wait.
    func testWithTheNetworkDisabledAndNoFileAFetchFailsAtOnce() async throws {
        start(bucketing(TrackingTestCase.deadURL).withNetworkDisabled())
        let visitor = await flagship.newVisitor(visitorId: "fay", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        let outcome: String? = await firstOf(deadline: Date().addingTimeInterval(10), clock: SystemClock()) { finish in
            Task {
                do {
                    try await visitor.fetchFlags()
                    finish("fetched")
                } catch {
                    finish("\(error)")
                }
            }
        }

        XCTAssertEqual(outcome, "\(FlagshipError.fetchFailed(.noBucketingFile))", "within 10 s")
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
    }

    func testAnUnusableBootstrapIsLoggedAndIgnored() async throws {
        start(bucketing(TrackingTestCase.deadURL).withBootstrap(bucketingFile: Data("not json".utf8)))
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZING)
        XCTAssertTrue(log.messages(at: .error).contains { $0.hasPrefix("The bootstrap bucketing file is unusable") }, log.allText)
    }
}
