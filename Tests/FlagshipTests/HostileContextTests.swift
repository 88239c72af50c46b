import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// Context values are exact or refused naming the key; `fs_` keys are the SDK's (issue 18, point 11).
final class HostileContextTests: SDKTestCase {
    func testAnIntegerBeyondSixtyFourBitsIsRefusedNamingTheKeyNotSentAsADouble() throws {
        start()
        let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(
            with: Data(#"{"big": 18446744073709551615, "plan": "pro"}"#.utf8)) as? [String: Any])
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: parsed).build()
        visitor.updateContext("unsigned", UInt64.max)
        visitor.updateContext(["number": NSNumber(value: UInt64.max), "age": 32])

        let state = visitor.contextValues
        XCTAssertNil(state["big"])
        XCTAssertNil(state["unsigned"])
        XCTAssertNil(state["number"])
        XCTAssertEqual(state["plan"], .string("pro"))
        XCTAssertEqual(state["age"], .int(32))
        let errors = log.messages(at: .error)
        for key in ["big", "unsigned", "number"] {
            XCTAssertTrue(errors.contains { $0.contains("context key '\(key)' refused: 18446744073709551615 is an integer outside the 64-bit range") },
                          "\(key): \(errors)")
        }
    }

    func testFsKeysBelongToTheSDKAndAreNeitherSetNorSent() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["fs_client": "forged", "plan": "pro"]).buildAsync()
        visitor.updateContext("fs_version", "0.0.0")
        visitor.updateContext(["fs_users": "x", "sdk_deviceModel": "my model"])
        try await visitor.fetchFlags()

        let state = visitor.contextValues
        XCTAssertNil(state["fs_client"])
        XCTAssertNil(state["fs_version"])
        XCTAssertNil(state["fs_users"])
        XCTAssertEqual(state["sdk_deviceModel"], .string("my model"), "sdk_ keys stay the app's to override")
        let sent = try XCTUnwrap(server.received(.campaigns).last?.json?["context"])
        XCTAssertEqual(sent["fs_client"], .string(SDKInfo.clientName))
        XCTAssertEqual(sent["fs_version"], .string(SDKInfo.version))
        XCTAssertNil(sent["fs_users"])
        XCTAssertEqual(sent["sdk_deviceModel"], "my model")
        let errors = log.messages(at: .error)
        for key in ["fs_client", "fs_version", "fs_users"] {
            XCTAssertEqual(errors.filter { $0.contains("context key '\(key)' refused: keys starting with fs_ belong to the SDK") }.count, 1,
                           "\(key): \(errors)")
        }
    }

    func testTheCheckingVariantsThrowTheKeyAndChangeNothing() throws {
        start()
        XCTAssertThrowsError(try flagship.newVisitor(visitorId: "v1", hasConsented: true)
            .withContext(checking: ["plan": "pro", "ratio": Double.nan])) { error in
            XCTAssertEqual(error as? ContextError, ContextError(key: "ratio", reason: "nan is not a finite number"))
        }
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: ["plan": "pro"]).build()
        XCTAssertThrowsError(try visitor.updateContext(checking: ["age": 40, "nested": ["a": 1]])) { error in
            XCTAssertEqual((error as? ContextError)?.key, "nested")
        }
        XCTAssertThrowsError(try visitor.updateContext(checking: ["fs_client": "forged"])) { error in
            XCTAssertEqual(error as? ContextError, ContextError(key: "fs_client", reason: "keys starting with fs_ belong to the SDK"))
        }
        XCTAssertNil(visitor.contextValues["age"], "all or nothing")
        try visitor.updateContext(checking: ["age": 40])
        XCTAssertEqual(visitor.contextValues["age"], .int(40))
    }
}
