import FlagshipLocalServer
import FlagshipStore
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
        let transaction = FSTransaction(transactionId: "transacId", affiliation: "BasketTransac")
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
        let item = FSItem(transactionId: "transacId", name: "itemName", code: "codeSku")
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
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "cta_Shop")
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
        let sessionWire: [String: FSJSONValue] = [
            "uip": .string("168.192.1.0"), "sr": .string("750 x 1334"), "ul": .string("fr"),
            "cst": .int(1_732_170_000), "sn": .int(12), "sd": .string("#fd0027"), "sen": .int(2),
        ]
        let hits: [any WireEncodableHit] = [
            FSScreen("home"), FSPage("https://example.com/"), FSTransaction(transactionId: "T1", affiliation: "Basket"),
            FSItem(transactionId: "T1", name: "shoe", code: "SKU1"), FSEvent(eventCategory: .Action_Tracking, eventAction: "click"),
        ]

        for hit in hits {
            let withoutSession = try hit.wireFields()
            hit.commonFields = session
            XCTAssertEqual(try hit.wireFields(), withoutSession.merging(sessionWire) { _, new in new }, "\(hit.type)")
        }
    }

    func testCommonFieldPropertiesAreTheHitsCommonFields() throws {
        let screen = FSScreen("loginScreen")
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

    func testTheReferencesHitsDeclaredWithLetSendTheirExactFields() throws {
        let eventScreen = FSScreen("loginScreen")
        eventScreen.userIp = "168.192.1.0"
        eventScreen.sessionNumber = 12
        let transacEvent: FSTransaction = FSTransaction(transactionId: "transacId", affiliation: "BasketTransac")
        transacEvent.currency = "EUR"
        transacEvent.itemCount = 0
        transacEvent.tax = 2.6
        transacEvent.revenue = 15
        transacEvent.shipping = 3.5
        let itemHit = FSItem(transactionId: "idTransaction", name: "itemName", code: "codeSku")
        itemHit.price = 20
        itemHit.category = "shoes"
        itemHit.quantity = 2
        let actionEvent: FSEvent = FSEvent(eventCategory: FSCategoryEvent.Action_Tracking, eventAction: "cta_Shop")
        actionEvent.label = "cta_Shop_label"
        actionEvent.eventValue = 1

        XCTAssertEqual(
            try eventScreen.wireFields(),
            ["t": .string("SCREENVIEW"), "dl": .string("loginScreen"), "uip": .string("168.192.1.0"), "sn": .int(12)])
        XCTAssertEqual(
            try transacEvent.wireFields(),
            [
                "t": .string("TRANSACTION"), "tid": .string("transacId"), "ta": .string("BasketTransac"),
                "tc": .string("EUR"), "icn": .int(0), "tt": .double(2.6), "tr": .double(15), "ts": .double(3.5),
            ])
        XCTAssertEqual(
            try itemHit.wireFields(),
            [
                "t": .string("ITEM"), "tid": .string("idTransaction"), "in": .string("itemName"),
                "ic": .string("codeSku"), "ip": .double(20), "iv": .string("shoes"), "iq": .int(2),
            ])
        XCTAssertEqual(
            try actionEvent.wireFields(),
            [
                "t": .string("EVENT"), "ec": .string("Action Tracking"), "ea": .string("cta_Shop"),
                "el": .string("cta_Shop_label"), "ev": .int(1),
            ])
    }

    func testFloatAmountsAreSentAsTheirShortestDecimalNotTheWidenedBinaryValue() throws {
        let amounts: [(Float, Double, String)] = [
            (19.99, 19.99, "19.99"), (2.6, 2.6, "2.6"), (15, 15, "15.0"), (0.1, 0.1, "0.1"),
            (99_999.99, 99_999.99, "99999.99"), (1_234_567, 1_234_567, "1234567.0"),
        ]
        for (amount, expected, json) in amounts {
            let item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
            item.price = amount
            let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
            transaction.revenue = amount

            XCTAssertEqual(try item.wireFields()["ip"], .double(expected), "\(amount)")
            XCTAssertEqual(try item.wireFields()["ip"]?.jsonString(), json, "\(amount)")
            XCTAssertEqual(try transaction.wireFields()["tr"], .double(expected), "\(amount)")
        }
    }

    func testAFloatVariableCanBeAssignedToEveryAmount() throws {
        let price: Float = 19.99
        let item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
        item.price = price
        let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        transaction.revenue = price
        transaction.shipping = price
        transaction.tax = price

        XCTAssertEqual(item.price, 19.99)
        XCTAssertEqual(try transaction.wireFields()["ts"], .double(19.99))
        XCTAssertEqual(try transaction.wireFields()["tt"], .double(19.99))
    }

    func testTwoTasksChangingOneHitAtOnceBothKeepEveryChange() async throws {
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        let rounds = 2_000

        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 1...rounds {
                    event.label = "label-\(round)"
                    event.sessionNumber = round
                }
            }
            group.addTask {
                for round in 1...rounds {
                    event.eventValue = UInt(round)
                    event.userLanguage = "lang-\(round)"
                    _ = try? event.wireFields()
                }
            }
        }

        XCTAssertEqual(
            try event.wireFields(),
            [
                "t": .string("EVENT"), "ec": .string("Action Tracking"), "ea": .string("click"),
                "el": .string("label-\(rounds)"), "ev": .int(Int64(rounds)), "sn": .int(Int64(rounds)),
                "ul": .string("lang-\(rounds)"),
            ])
    }

    func testAHitIsOneObjectSoAChangeThroughAnyReferenceIsSeenByAll() throws {
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        let sameEvent = event
        sameEvent.label = "changed"
        sameEvent.userLanguage = "de"

        XCTAssertEqual(event.label, "changed")
        XCTAssertEqual(try event.wireFields()["ul"], .string("de"))
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
        // Only code that sees the SDK's internals (this @testable test) can make the seal: the
        // run-time refusal is the backstop behind the compile-time one (SealedHitProtocolTests).
        struct CustomHit: FSTrackingProtocol {
            var type: FSTypeTrack { .EVENT }
            var sdkHitSeal: FSHitSeal { FSHitSeal() }
        }
        expectHitRefused({ try encodedForSending(CustomHit()) }, .notAnSDKHit(typeName: "CustomHit"))
        XCTAssertEqual(
            HitValidationError.notAnSDKHit(typeName: "CustomHit").description,
            "hit of type CustomHit refused: only the SDK's hits (FSScreen, FSPage, FSTransaction, FSItem, FSEvent) can be sent")
    }

    func testAHitOfTheCallersWithCommonFieldsIsRefusedToo() {
        expectHitRefused({ try encodedForSending(CustomHitWithCommonFields()) }, .notAnSDKHit(typeName: "CustomHitWithCommonFields"))
    }

    func testTheCommonFieldPropertiesWorkOnAHitOfTheCallersToo() {
        let hit = CustomHitWithCommonFields()
        hit.sessionNumber = 3
        hit.userLanguage = "fr"

        XCTAssertEqual(hit.commonFields, FSHitCommonFields(userIp: "10.0.0.1", userLanguage: "fr", sessionNumber: 3))
    }
}

/// `sendHit` takes the hit's fields at the call: the hit is the caller's object, what was sent is not.
final class HitSentTests: TrackingTestCase {
    func testChangingAHitRightAfterSendHitChangesNothingThatIsSent() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        let item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
        item.price = 19.99
        item.userIp = "203.0.113.7"

        // The synchronous sendHit: it returns before the hit is written or sent.
        let sendAndForget = { visitor.sendHit(item) }
        sendAndForget()
        item.name = "changed"
        item.price = 1
        item.quantity = 5
        item.userIp = "10.0.0.1"
        item.commonFields = FSHitCommonFields(userLanguage: "de")
        let hits = try await server.waitForHits(count: 2)

        let sent = try XCTUnwrap(hits.first { $0["t"] == "ITEM" })
        XCTAssertEqual(
            sent,
            [
                "t": "ITEM", "tid": "T1", "in": "shoe", "ic": "SKU1", "ip": 19.99, "uip": "203.0.113.7",
                "vid": "v1", "ds": "APP", "cid": .string(Self.envId), "qt": 0,
            ])
    }
}

/// A hit type made outside the SDK: it can use the common-field properties, but cannot be sent.
private final class CustomHitWithCommonFields: FSHitWithCommonFields, Sendable {
    private let stored = Locked(FSHitCommonFields(userIp: "10.0.0.1"))
    var type: FSTypeTrack { .SCREENVIEW }
    var sdkHitSeal: FSHitSeal { FSHitSeal() }
    var commonFields: FSHitCommonFields {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
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
