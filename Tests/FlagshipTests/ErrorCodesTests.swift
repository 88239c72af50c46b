import Foundation
import XCTest

@testable import Flagship

/// The public errors are structs with a code to switch on and their details as properties: made
/// and compared as the enums were, matched by code, and a new kind would not break a `switch`.
final class ErrorCodesTests: XCTestCase {
    func testEachKindHasItsCodeAndOnlyItsDetails() throws {
        let fetch = FlagshipError.fetchFailed(.httpStatus(503))
        XCTAssertEqual(fetch.code, .fetchFailed)
        XCTAssertEqual(fetch.fetchFailure?.code, .httpStatus)
        XCTAssertEqual(fetch.fetchFailure?.status, 503)
        XCTAssertNil(fetch.cacheError)
        XCTAssertNil(fetch.backlog)

        let overloaded = FlagshipError.overloaded(backlog: 42, waited: 5)
        XCTAssertEqual(overloaded.code, .overloaded)
        XCTAssertEqual(overloaded.backlog, 42)
        XCTAssertEqual(overloaded.waited, 5)
        XCTAssertNil(overloaded.fetchFailure)

        let consent = FlagshipError.consentNotGiven(visitorId: "v1")
        XCTAssertEqual(consent.visitorId, "v1")
        XCTAssertFalse(consent.description.contains("v1"), "the id is a property, not in the text a caller may log")

        let timedOut = FSFetchFailure.timedOut(after: 2)
        XCTAssertEqual(timedOut.code, .timedOut)
        XCTAssertEqual(timedOut.waited, 2)
        XCTAssertNil(timedOut.status)
        XCTAssertEqual(timedOut.description, "the Decision API did not answer within 2000 ms")
    }

    func testAHitRefusalNamesTheHitTheFieldAndWhy() {
        let refused = FSHitValidationError.invalidValue(hit: "PAGEVIEW", field: "dl", reason: "is not a URL")
        XCTAssertEqual(refused.code, .invalidValue)
        XCTAssertEqual(refused.hitType, "PAGEVIEW")
        XCTAssertEqual(refused.field, "dl")
        XCTAssertEqual(refused.why, "is not a URL")
        XCTAssertEqual(refused.description, "PAGEVIEW hit refused: field dl (location) is not a URL")
        let missing = FSHitValidationError.missingField(hit: "TRANSACTION", field: "tid")
        XCTAssertEqual(missing.code, .missingField)
        XCTAssertNil(missing.why)
        let foreign = FSHitValidationError.notAnSDKHit(typeName: "MyHit")
        XCTAssertEqual(foreign.typeName, "MyHit")
        XCTAssertNil(foreign.field)
        XCTAssertEqual(FlagshipError.invalidHit(missing).hitValidation, missing)
    }

    func testErrorsCompareWithTheirDetails() {
        XCTAssertEqual(FlagshipError.fetchFailed(.httpStatus(503)), .fetchFailed(.httpStatus(503)))
        XCTAssertNotEqual(FlagshipError.fetchFailed(.httpStatus(503)), .fetchFailed(.httpStatus(500)))
        XCTAssertNotEqual(FlagshipError.closed, .panic)
        XCTAssertEqual(FSFetchFailure.noBucketingFile, .noBucketingFile)
    }

    func testACodeMatchesAThrownErrorOfItsKind() async {
        func fail() async throws { throw FlagshipError.overloaded(backlog: 1, waited: 0) }
        do {
            try await fail()
            XCTFail("thrown")
        } catch FlagshipError.Code.fetchFailed {
            XCTFail("another kind matched")
        } catch FlagshipError.Code.overloaded {
            // The kind, unbound.
        } catch {
            XCTFail("not matched: \(error)")
        }
        XCTAssertTrue(FSFetchFailure.Code.malformedBody ~= FSFetchFailure.malformedBody("not JSON"))
        XCTAssertFalse(FlagshipError.Code.closed ~= CancellationError())
    }

    func testEveryCodeHasItsName() {
        let codes: [FlagshipError.Code] = [.sdkNotInitialized, .panic, .consentNotGiven, .invalidHit, .fetchFailed, .closed,
                                           .hitNotCached, .overloaded, .hitNotWritten]
        XCTAssertEqual(Set(codes.map(\.description)).count, codes.count)
        XCTAssertEqual(FlagshipError.Code.hitNotWritten.description, "hitNotWritten")
        XCTAssertEqual(FSFetchFailure.Code.storeUnavailable.description, "storeUnavailable")
    }
}
