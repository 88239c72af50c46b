import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// `bucketingFileChanges()` and `FSVisitor.flagChanges()`: what a new bucketing file changed, and
/// a watched visitor's flags that changed with it, driven by the poller; nothing without a change.
final class FlagChangesTests: SDKTestCase {
    private func start(file: Data) throws {
        try server.setBucketingFile(file, lastModified: Date(timeIntervalSince1970: 1_700_000_000))
        start(configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(3600))
    }

    /// Serves `file` as newer than the one in use and polls now.
    private func publish(_ file: Data, at seconds: TimeInterval) async throws {
        try server.setBucketingFile(file, lastModified: Date(timeIntervalSince1970: seconds))
        await flagship.currentRuntime?.bucketing?.poll()
    }

    func testANewFileTellsWhichCampaignsAndFlagKeysChangedAndTheSameFileTellsNothing() async throws {
        try start(file: BucketingModeTests.bucketingFile(greenShare: 50))
        _ = await flagship.newVisitor(visitorId: "warm", hasConsented: true).buildAsync().fetchFlagsIgnoringErrors()
        let changes = flagship.bucketingFileChanges()
        var iterator = changes.makeAsyncIterator()

        try await publish(BucketingModeTests.bucketingFile(greenShare: 50), at: 1_700_000_100)   // the same campaigns
        try await publish(BucketingModeTests.bucketingFile(greenShare: 90, vipValue: "express"), at: 1_700_000_200)

        let change = await iterator.next()
        XCTAssertEqual(change, FSBucketingFileChange(campaignsAdded: [], campaignsRemoved: [], campaignsChanged: ["c_checkout", "c_vip"],
                                                     flagKeys: ["btnColor", "shipping"], panic: false),
                       "the first event is the second file's: the repeated one told nothing")
    }

    func testAWatchedVisitorIsDecidedAgainOnANewFileAndHearsOfItsChangedFlags() async throws {
        try start(file: BucketingModeTests.bucketingFile(vipValue: "free"))
        let visitor = await flagship.newVisitor(visitorId: "alice", hasConsented: true)
            .withContext(context: ["isVip": true]).buildAsync()
        try await visitor.fetchFlags()
        var changes = visitor.flagChanges().makeAsyncIterator()

        try await publish(BucketingModeTests.bucketingFile(vipValue: "express"), at: 1_700_000_100)

        let next = await changes.next()
        let changed = try XCTUnwrap(next)
        XCTAssertEqual(changed.map(\.key), ["shipping"])
        XCTAssertEqual(changed.first?.oldValue as? String, "free")
        XCTAssertEqual(changed.first?.newValue as? String, "express")
        XCTAssertEqual(visitor.getFlag(key: "shipping").value(defaultValue: "none"), "express", "decided again on the new file")
    }

    /// A consumer that does not read: the stream keeps the newest 16 changes, the oldest go, and
    /// the poller never waits for it.
    func testAStreamNobodyReadsKeepsTheNewestSixteenChanges() async throws {
        try start(file: BucketingModeTests.bucketingFile(vipValue: "v0"))
        let visitor = await flagship.newVisitor(visitorId: "carol", hasConsented: true)
            .withContext(context: ["isVip": true]).buildAsync()
        try await visitor.fetchFlags()
        let changes = visitor.flagChanges()

        for number in 1...20 {
            try await publish(BucketingModeTests.bucketingFile(vipValue: "v\(number)"), at: 1_700_000_000 + Double(number) * 100)
            // The watched visitor is decided again in a task of its own: its change is told before
            // its fetch says FETCHED, so both together mean this file's change is in the stream.
            let deadline = ContinuousClock.now + .seconds(10)
            while visitor.getFlag(key: "shipping").value(defaultValue: "none", visitorExposed: false) != "v\(number)"
                    || visitor.fetchStatus != .FETCHED {
                guard ContinuousClock.now < deadline else { return XCTFail("file \(number) was not decided on") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        await flagship.close()

        var received: [String] = []
        for await change in changes { received.append(contentsOf: change.compactMap { $0.newValue as? String }) }
        XCTAssertEqual(received, (5...20).map { "v\($0)" }, "the newest 16, in order")
    }

    func testStreamsEndWithClose() async throws {
        try start(file: BucketingModeTests.bucketingFile())
        let visitor = await flagship.newVisitor(visitorId: "bob", hasConsented: true).buildAsync()
        let fileChanges = flagship.bucketingFileChanges()
        let flagChanges = visitor.flagChanges()
        await flagship.close()
        var files = fileChanges.makeAsyncIterator()
        var flags = flagChanges.makeAsyncIterator()
        let file = await files.next()
        let flag = await flags.next()
        XCTAssertNil(file)
        XCTAssertNil(flag)
    }
}

private extension FSVisitor {
    func fetchFlagsIgnoringErrors() async -> FSVisitor {
        try? await fetchFlags()
        return self
    }
}
