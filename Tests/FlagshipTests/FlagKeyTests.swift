import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// `FlagKey`: a flag declared once with its type and default, read without casts.
final class FlagKeyTests: SDKTestCase {
    private enum Flags {
        static let color = FlagKey("btnColor", default: "blue")
        static let shipping = FlagKey("shipping", default: "standard")
        static let colorAsNumber = FlagKey("btnColor", default: 0)
        static let missing = FlagKey("nope", default: true)
    }

    private func decidedVisitor() async throws -> FSVisitor {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL))
        let visitor = await flagship.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["isVip": true]).buildAsync()
        try await visitor.fetchFlags()
        return visitor
    }

    func testATypedKeyReadsItsValueOrItsDefault() async throws {
        let visitor = try await decidedVisitor()

        let color: String = visitor.value(of: Flags.color, visitorExposed: false)
        XCTAssertEqual(color, visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false))
        XCTAssertEqual(visitor.value(of: Flags.shipping), "free")
        XCTAssertEqual(visitor.value(of: Flags.missing), true, "missing: the key's default")
        XCTAssertEqual(visitor.details(of: Flags.missing).errorCode, .FLAG_NOT_FOUND)
        XCTAssertEqual(visitor.details(of: Flags.shipping).reason, .TARGETING_MATCH)
    }

    func testATypeMismatchGivesTheDefaultWithTypeMismatchLoggedOncePerKey() async throws {
        let visitor = try await decidedVisitor()

        XCTAssertEqual(visitor.value(of: Flags.colorAsNumber), 0)
        XCTAssertEqual(visitor.value(of: Flags.colorAsNumber), 0)
        let details = visitor.details(of: Flags.colorAsNumber)
        XCTAssertEqual(details.value, 0)
        XCTAssertEqual(details.reason, .ERROR)
        XCTAssertEqual(details.errorCode, .TYPE_MISMATCH)
        let warnings = log.messages(at: .warning).filter { $0.hasPrefix("Flag 'btnColor' holds a string, not Int") }
        XCTAssertEqual(warnings.count, 1, log.allText)
    }
}
