import Foundation
import XCTest

@testable import Flagship

final class FlagValueTests: XCTestCase {
    func testEachJSONKindReadsAsItsSwiftType() {
        XCTAssertEqual(FlagValue.convert(.string("green"), to: String.self), "green")
        XCTAssertEqual(FlagValue.convert(.bool(true), to: Bool.self), true)
        XCTAssertEqual(FlagValue.convert(.int(42), to: Int.self), 42)
        XCTAssertEqual(FlagValue.convert(.double(9.99), to: Double.self), 9.99)
        let array = FlagValue.convert(.array([.int(1), .string("two")]), to: [Any].self)
        XCTAssertEqual(array?.count, 2)
        XCTAssertEqual(array?.first as? Int, 1)
        XCTAssertEqual(FlagValue.convert(.array([.string("a"), .string("b")]), to: [String].self), ["a", "b"])
        let object = FlagValue.convert(.object(["size": .int(3), "nested": .object(["on": .bool(true)])]), to: [String: Any].self)
        XCTAssertEqual(object?["size"] as? Int, 3)
        XCTAssertEqual((object?["nested"] as? [String: Any])?["on"] as? Bool, true)
    }

    func testIntAndDoubleInterchangeWhenTheNumberFits() {
        XCTAssertEqual(FlagValue.convert(.int(3), to: Double.self), 3.0)
        XCTAssertEqual(FlagValue.convert(.double(4.0), to: Int.self), 4)
        XCTAssertNil(FlagValue.convert(.double(4.5), to: Int.self), "a fraction does not fit an Int")
        XCTAssertNil(FlagValue.convert(.double(1e300), to: Int.self))
    }

    func testABoolNeverComesFromANumberNorANumberFromABool() {
        XCTAssertNil(FlagValue.convert(.int(1), to: Bool.self))
        XCTAssertNil(FlagValue.convert(.double(0), to: Bool.self))
        XCTAssertNil(FlagValue.convert(.bool(true), to: Int.self))
    }

    func testOtherMismatchesGiveNothing() {
        XCTAssertNil(FlagValue.convert(.string("1"), to: Int.self))
        XCTAssertNil(FlagValue.convert(.int(1), to: String.self))
        XCTAssertNil(FlagValue.convert(.object([:]), to: [Any].self))
        XCTAssertNil(FlagValue.convert(.null, to: String.self))
    }

    func testAnyTakesTheRawValue() {
        XCTAssertEqual(FlagValue.convert(.string("x"), to: Any.self) as? String, "x")
        XCTAssertEqual(FlagValue.convert(.int(7), to: Any.self) as? Int, 7)
    }
}

final class ContextValueTests: XCTestCase {
    func testStringsBoolsIntegersAndDoublesAreAccepted() throws {
        XCTAssertEqual(try ContextValue.validate("pro").get(), .string("pro"))
        XCTAssertEqual(try ContextValue.validate(true).get(), .bool(true))
        XCTAssertEqual(try ContextValue.validate(32).get(), .int(32))
        XCTAssertEqual(try ContextValue.validate(Int8(-3)).get(), .int(-3))
        XCTAssertEqual(try ContextValue.validate(1.5).get(), .double(1.5))
        XCTAssertEqual(try ContextValue.validate(Float(0.25)).get(), .double(0.25))
    }

    func testOtherValuesAreRefusedWithTheirType() {
        for (value, reason) in [
            ([1, 2] as Any, "a Array<Int> is not a String, Bool, Int or Double"),
            (["a": 1] as Any, "a Dictionary<String, Int> is not a String, Bool, Int or Double"),
            (Date(timeIntervalSince1970: 0) as Any, "a Date is not a String, Bool, Int or Double"),
            (Double.nan as Any, "nan is not a finite number"),
        ] {
            guard case .failure(let error) = ContextValue.validate(value) else { return XCTFail("\(value) accepted") }
            XCTAssertEqual(error.reason, reason)
        }
    }

    func testPredefinedKeysCheckTheirOwnType() {
        XCTAssertEqual(FlagshipContext.LOCATION_LAT.accepts(.int(43)), .double(43))
        XCTAssertEqual(FlagshipContext.APP_VERSION_CODE.accepts(.int(40)), .int(40))
        XCTAssertNil(FlagshipContext.APP_VERSION_CODE.accepts(.string("40")))
        XCTAssertNil(FlagshipContext.DEV_MODE.accepts(.int(1)))
        XCTAssertEqual(FlagshipContext.CARRIER_NAME.accepts(.string("SFR")), .string("SFR"))
    }

    func testAutoSetValuesDescribeThisLinuxMachine() {
        let values = FlagshipContext.autoSetValues(firstTimeInit: true)
        XCTAssertEqual(values["sdk_osName"], .string("linux"))
        XCTAssertEqual(values["sdk_fsVersion"], .string(SDKInfo.version))
        XCTAssertEqual(values["sdk_firstTimeInit"], .bool(true))
        XCTAssertNotNil(values["sdk_osVersionName"]?.stringValue)
        XCTAssertNotNil(values["sdk_deviceLanguage"]?.stringValue)
    }
}
