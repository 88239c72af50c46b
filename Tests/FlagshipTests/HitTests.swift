import XCTest

@testable import Flagship

/// What each hit puts on the wire (PROTOCOL.md section 2): whole field dictionaries, without identity,
/// `cid`, `ds` or `qt`, which the tracking manager adds at send time.
final class HitTests: XCTestCase {
    func testScreenSendsItsLocation() throws {
        XCTAssertEqual(
            try FSScreen("loginScreen").wireFields(),
            ["t": .string("SCREENVIEW"), "dl": .string("loginScreen")])
    }

    func testPageSendsItsURL() throws {
        XCTAssertEqual(
            try FSPage("https://www.my_domain_com/my_page").wireFields(),
            ["t": .string("PAGEVIEW"), "dl": .string("https://www.my_domain_com/my_page")])
    }

    func testTransactionSendsEveryFieldItHas() throws {
        var transaction = FSTransaction(transactionId: "transacId", affiliation: "BasketTransac")
        transaction.revenue = 15
        transaction.shipping = 3.5
        transaction.tax = 2.6
        transaction.currency = "EUR"
        transaction.paymentMethod = "PayPal"
        transaction.shippingMethod = "Fedex"
        transaction.itemCount = 0
        transaction.couponCode = "WELCOME10"

        XCTAssertEqual(
            try transaction.wireFields(),
            [
                "t": .string("TRANSACTION"), "tid": .string("transacId"), "ta": .string("BasketTransac"),
                "tr": .double(15), "ts": .double(3.5), "tt": .double(2.6), "tc": .string("EUR"),
                "pm": .string("PayPal"), "sm": .string("Fedex"), "icn": .int(0), "tcc": .string("WELCOME10"),
            ])
    }

    func testTransactionWithOnlyItsRequiredFieldsLeavesTheOthersOut() throws {
        XCTAssertEqual(
            try FSTransaction(transactionId: "transacId", affiliation: "BasketTransac").wireFields(),
            ["t": .string("TRANSACTION"), "tid": .string("transacId"), "ta": .string("BasketTransac")])
    }

    func testItemSendsEveryFieldItHas() throws {
        var item = FSItem(transactionId: "transacId", name: "itemName", code: "codeSku")
        item.price = 20
        item.quantity = 2
        item.category = "shoes"

        XCTAssertEqual(
            try item.wireFields(),
            [
                "t": .string("ITEM"), "tid": .string("transacId"), "in": .string("itemName"),
                "ic": .string("codeSku"), "ip": .double(20), "iq": .int(2), "iv": .string("shoes"),
            ])
    }

    func testItemWithOnlyItsRequiredFieldsLeavesTheOthersOut() throws {
        XCTAssertEqual(
            try FSItem(transactionId: "transacId", name: "itemName", code: "codeSku").wireFields(),
            ["t": .string("ITEM"), "tid": .string("transacId"), "in": .string("itemName"), "ic": .string("codeSku")])
    }

    func testEventSendsEveryFieldItHas() throws {
        var event = FSEvent(eventCategory: .Action_Tracking, eventAction: "cta_Shop")
        event.label = "cta_Shop_label"
        event.eventValue = 1

        XCTAssertEqual(
            try event.wireFields(),
            [
                "t": .string("EVENT"), "ec": .string("Action Tracking"), "ea": .string("cta_Shop"),
                "el": .string("cta_Shop_label"), "ev": .int(1),
            ])
    }

    func testEventWithOnlyItsRequiredFieldsSendsItsCategoryWireName() throws {
        XCTAssertEqual(
            try FSEvent(eventCategory: .User_Engagement, eventAction: "newsletter").wireFields(),
            ["t": .string("EVENT"), "ec": .string("User Engagement"), "ea": .string("newsletter")])
    }

    func testCommonFieldsAreSentOnEveryHitType() throws {
        let session = FSHitCommonFields(
            userIp: "168.192.1.0", screenResolution: "750 x 1334", userLanguage: "fr",
            currentSessionTimeStamp: 1_732_170_000, sessionNumber: 12, screenColorDepth: "#fd0027",
            sessionEventNumber: 2)
        let sessionWire: [String: JSONValue] = [
            "uip": .string("168.192.1.0"), "sr": .string("750 x 1334"), "ul": .string("fr"),
            "cst": .int(1_732_170_000), "sn": .int(12), "sd": .string("#fd0027"), "sen": .int(2),
        ]
        var screen = FSScreen("home")
        var page = FSPage("https://example.com/")
        var transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        var item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
        var event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        screen.commonFields = session
        page.commonFields = session
        transaction.commonFields = session
        item.commonFields = session
        event.commonFields = session
        let hits: [any WireEncodableHit] = [screen, page, transaction, item, event]

        for hit in hits {
            var withoutSession = hit
            withoutSession.commonFields = FSHitCommonFields()
            let expected = try withoutSession.wireFields().merging(sessionWire) { _, new in new }
            XCTAssertEqual(try hit.wireFields(), expected, "\(hit.type)")
        }
    }

    func testCommonFieldPropertiesAreTheHitsCommonFields() throws {
        var screen = FSScreen("loginScreen")
        screen.userIp = "168.192.1.0"
        screen.screenResolution = "750 x 1334"
        screen.userLanguage = "fr"
        screen.currentSessionTimeStamp = 1_732_170_000
        screen.sessionNumber = 1
        screen.screenColorDepth = "#fd0027"
        screen.sessionEventNumber = 2

        XCTAssertEqual(
            screen.commonFields,
            FSHitCommonFields(
                userIp: "168.192.1.0", screenResolution: "750 x 1334", userLanguage: "fr",
                currentSessionTimeStamp: 1_732_170_000, sessionNumber: 1, screenColorDepth: "#fd0027",
                sessionEventNumber: 2))
        XCTAssertEqual(screen.sessionNumber, 1)
    }

    func testHitsAreValuesSoACopyChangesAlone() throws {
        var first = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        var second = first
        second.label = "second"
        second.userLanguage = "de"
        first.label = "first"

        XCTAssertEqual(try first.wireFields()["el"], .string("first"))
        XCTAssertEqual(try first.wireFields()["ul"], nil)
        XCTAssertEqual(try second.wireFields()["el"], .string("second"))
        XCTAssertEqual(try second.wireFields()["ul"], .string("de"))
    }

    func testEveryHitTypeIsOneTheHitCacheAccepts() {
        XCTAssertEqual(Set(FSTypeTrack.allCases.map(\.rawValue)), HitCacheDocument.knownTypes)
    }

    func testEncodedForSendingGivesTheHitsTypeAndFields() throws {
        let hit: any FSTrackingProtocol = FSScreen("home")
        let encoded = try encodedForSending(hit)

        XCTAssertEqual(encoded.type, .SCREENVIEW)
        XCTAssertEqual(encoded.fields, ["t": .string("SCREENVIEW"), "dl": .string("home")])
    }

    func testEncodedForSendingRefusesAnInvalidHit() {
        expectHitRefused(
            { try encodedForSending(FSEvent(eventCategory: .Action_Tracking, eventAction: "")) },
            .missingField(hit: "EVENT", field: "ea"))
    }

    func testEncodedForSendingRefusesAHitTypeMadeOutsideTheSDK() {
        struct CustomHit: FSTrackingProtocol {
            var type: FSTypeTrack { .EVENT }
        }
        expectHitRefused({ try encodedForSending(CustomHit()) }, .notAnSDKHit(typeName: "CustomHit"))
        XCTAssertEqual(
            HitValidationError.notAnSDKHit(typeName: "CustomHit").description,
            "hit of type CustomHit refused: only the SDK's hits (FSScreen, FSPage, FSTransaction, FSItem, FSEvent) can be sent")
    }

    func testAHitOfTheCallersWithCommonFieldsIsRefusedToo() {
        struct CustomHit: FSHitWithCommonFields {
            var commonFields = FSHitCommonFields(userIp: "10.0.0.1")
            var type: FSTypeTrack { .SCREENVIEW }
        }
        expectHitRefused({ try encodedForSending(CustomHit()) }, .notAnSDKHit(typeName: "CustomHit"))
    }
}

/// Asserts that `encode` throws exactly `expected`.
func expectHitRefused<T>(
    _ encode: () throws -> T, _ expected: HitValidationError,
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(try encode(), file: file, line: line) { error in
        XCTAssertEqual(error as? HitValidationError, expected, file: file, line: line)
    }
}
