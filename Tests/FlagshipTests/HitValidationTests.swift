import XCTest

@testable import Flagship

/// A hit with a missing or wrong field is refused, with an error naming the hit and the field
/// (PROTOCOL.md section 2); `sendHit` logs it and neither caches nor sends the hit.
final class HitValidationTests: XCTestCase {
    func testScreenWithAnEmptyLocationIsRefused() {
        for location in ["", "   ", "\n"] {
            expectHitRefused({ try FSScreen(location).wireFields() }, .missingField(hit: "SCREENVIEW", field: "dl"))
        }
    }

    func testPageWithAnEmptyLocationIsRefused() {
        expectHitRefused({ try FSPage("").wireFields() }, .missingField(hit: "PAGEVIEW", field: "dl"))
    }

    func testPageWhoseLocationIsNotAnAbsoluteURLIsRefused() {
        let locations = ["loginScreen", "http://", "/cart", "www.example.com", "https://exa mple.com/", "file:///tmp/a.html"]
        for location in locations {
            let reason = "must be a valid absolute URL with a scheme and a host, e.g. https://example.com/page"
            expectHitRefused(
                { try FSPage(location).wireFields() },
                .invalidValue(hit: "PAGEVIEW", field: "dl", reason: "\(reason) (got \"\(location)\")"))
        }
    }

    func testPageAcceptsAbsoluteURLsWithAnyScheme() throws {
        for location in ["https://www.my_domain_com/my_page", "http://localhost:8080/a?b=c#d", "myapp://home/cart"] {
            XCTAssertEqual(try FSPage(location).wireFields()["dl"], .string(location))
        }
    }

    func testTransactionWithoutIdOrAffiliationIsRefused() {
        expectHitRefused(
            { try FSTransaction(transactionId: "", affiliation: "Basket").wireFields() },
            .missingField(hit: "TRANSACTION", field: "tid"))
        expectHitRefused(
            { try FSTransaction(transactionId: "T1", affiliation: " ").wireFields() },
            .missingField(hit: "TRANSACTION", field: "ta"))
    }

    func testTransactionCurrencyMustBeAnISOCodeInCapitals() throws {
        for currency in ["eur", "Eur", "EURO", "EU", "E1R", "", "€€€"] {
            let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
            transaction.currency = currency
            expectHitRefused(
                { try transaction.wireFields() },
                .invalidValue(
                    hit: "TRANSACTION", field: "tc",
                    reason: "must be a 3-letter ISO 4217 currency code in capitals, e.g. EUR (got \"\(currency)\")"))
        }
        let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        transaction.currency = "JPY"
        XCTAssertEqual(try transaction.wireFields()["tc"], .string("JPY"))
    }

    func testTransactionNegativeAmountsAndItemCountAreRefused() {
        let cases: [(ReferenceWritableKeyPath<FSTransaction, Float?>, String)] = [(\.revenue, "tr"), (\.shipping, "ts"), (\.tax, "tt")]
        for (amount, field) in cases {
            let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
            transaction[keyPath: amount] = -0.5
            expectHitRefused(
                { try transaction.wireFields() },
                .invalidValue(hit: "TRANSACTION", field: field, reason: "must not be negative (got -0.5)"))
        }
        let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        transaction.itemCount = -1
        expectHitRefused(
            { try transaction.wireFields() },
            .invalidValue(hit: "TRANSACTION", field: "icn", reason: "must not be negative (got -1)"))
    }

    func testTransactionAmountsThatJSONCannotHoldAreRefused() {
        let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        transaction.revenue = .nan
        expectHitRefused(
            { try transaction.wireFields() },
            .invalidValue(hit: "TRANSACTION", field: "tr", reason: "must be a finite number (got nan)"))
        transaction.revenue = nil
        transaction.tax = .infinity
        expectHitRefused(
            { try transaction.wireFields() },
            .invalidValue(hit: "TRANSACTION", field: "tt", reason: "must be a finite number (got inf)"))
        transaction.tax = nil
        transaction.shipping = -.infinity
        expectHitRefused(
            { try transaction.wireFields() },
            .invalidValue(hit: "TRANSACTION", field: "ts", reason: "must be a finite number (got -inf)"))
    }

    func testAnAmountBeyondFloatsRangeIsRefusedAsNotFinite() {
        // Text beyond Float's range (the CLI's `--revenue 1e39`) reads as infinity: refused, not sent as null.
        let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        transaction.revenue = Float("1e39")
        expectHitRefused(
            { try transaction.wireFields() },
            .invalidValue(hit: "TRANSACTION", field: "tr", reason: "must be a finite number (got inf)"))
    }

    func testItemPriceThatJSONCannotHoldIsRefused() {
        let item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
        item.price = .nan
        expectHitRefused(
            { try item.wireFields() }, .invalidValue(hit: "ITEM", field: "ip", reason: "must be a finite number (got nan)"))
        item.price = -0.01
        expectHitRefused(
            { try item.wireFields() }, .invalidValue(hit: "ITEM", field: "ip", reason: "must not be negative (got -0.01)"))
    }

    func testLargestFiniteFloatAmountIsSentAsItsShortestDecimal() throws {
        let item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
        item.price = .greatestFiniteMagnitude
        XCTAssertEqual(try item.wireFields()["ip"], .double(3.4028235e38))
    }

    func testZeroAmountsAndCountsAreAccepted() throws {
        let transaction = FSTransaction(transactionId: "T1", affiliation: "Basket")
        transaction.revenue = 0
        transaction.itemCount = 0
        let item = FSItem(transactionId: "T1", name: "gift", code: "SKU0")
        item.price = 0
        item.quantity = 0
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        event.eventValue = 0

        XCTAssertEqual(try transaction.wireFields()["tr"], .double(0))
        XCTAssertEqual(try transaction.wireFields()["icn"], .int(0))
        XCTAssertEqual(try item.wireFields()["ip"], .double(0))
        XCTAssertEqual(try item.wireFields()["iq"], .int(0))
        XCTAssertEqual(try event.wireFields()["ev"], .int(0))
    }

    func testItemWithoutTransactionIdNameOrCodeIsRefused() {
        expectHitRefused(
            { try FSItem(transactionId: "", name: "shoe", code: "SKU1").wireFields() },
            .missingField(hit: "ITEM", field: "tid"))
        expectHitRefused(
            { try FSItem(transactionId: "T1", name: "", code: "SKU1").wireFields() },
            .missingField(hit: "ITEM", field: "in"))
        expectHitRefused(
            { try FSItem(transactionId: "T1", name: "shoe", code: "").wireFields() },
            .missingField(hit: "ITEM", field: "ic"))
    }

    func testItemNegativePriceOrQuantityIsRefused() {
        let item = FSItem(transactionId: "T1", name: "shoe", code: "SKU1")
        item.price = -20
        expectHitRefused(
            { try item.wireFields() }, .invalidValue(hit: "ITEM", field: "ip", reason: "must not be negative (got -20.0)"))
        item.price = 20
        item.quantity = -2
        expectHitRefused(
            { try item.wireFields() }, .invalidValue(hit: "ITEM", field: "iq", reason: "must not be negative (got -2)"))
    }

    func testEventWithAnEmptyActionIsRefused() {
        expectHitRefused(
            { try FSEvent(eventCategory: .Action_Tracking, eventAction: "").wireFields() },
            .missingField(hit: "EVENT", field: "ea"))
    }

    func testEventActionOrLabelOver500BytesIsRefused() throws {
        let longest = String(repeating: "é", count: 250)  // 500 bytes in UTF-8
        let tooLong = longest + "a"
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: longest)
        event.label = longest
        XCTAssertEqual(try event.wireFields()["ea"], .string(longest))

        event.eventAction = tooLong
        expectHitRefused(
            { try event.wireFields() },
            .invalidValue(hit: "EVENT", field: "ea", reason: "must be at most 500 bytes in UTF-8 (got 501)"))
        event.eventAction = "click"
        event.label = tooLong
        expectHitRefused(
            { try event.wireFields() },
            .invalidValue(hit: "EVENT", field: "el", reason: "must be at most 500 bytes in UTF-8 (got 501)"))
    }

    func testEventValueBeyondWhatJSONIntegersHoldIsRefused() throws {
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        event.eventValue = UInt(Int64.max)
        XCTAssertEqual(try event.wireFields()["ev"], .int(Int64.max))

        event.eventValue = UInt(Int64.max) + 1
        expectHitRefused(
            { try event.wireFields() },
            .invalidValue(
                hit: "EVENT", field: "ev", reason: "must be at most 9223372036854775807 (got 9223372036854775808)"))
    }

    func testNegativeSessionNumbersOrTimestampAreRefusedOnAnyHit() {
        let screen = FSScreen("home")
        screen.sessionNumber = -1
        expectHitRefused(
            { try screen.wireFields() },
            .invalidValue(hit: "SCREENVIEW", field: "sn", reason: "must not be negative (got -1)"))
        let event = FSEvent(eventCategory: .User_Engagement, eventAction: "click")
        event.sessionEventNumber = -3
        expectHitRefused(
            { try event.wireFields() }, .invalidValue(hit: "EVENT", field: "sen", reason: "must not be negative (got -3)"))
        let page = FSPage("https://example.com/")
        page.currentSessionTimeStamp = -1
        expectHitRefused(
            { try page.wireFields() }, .invalidValue(hit: "PAGEVIEW", field: "cst", reason: "must not be negative (got -1)"))
    }

    func testRefusalsSayWhichHitWhichWireFieldAndWhichProperty() {
        XCTAssertEqual(
            HitValidationError.missingField(hit: "TRANSACTION", field: "tid").description,
            "TRANSACTION hit refused: required field tid (transactionId) is missing or empty")
        XCTAssertEqual(
            HitValidationError.invalidValue(hit: "PAGEVIEW", field: "dl", reason: "must be a valid absolute URL").description,
            "PAGEVIEW hit refused: field dl (location) must be a valid absolute URL")
        XCTAssertEqual(
            HitValidationError.invalidValue(hit: "SCREENVIEW", field: "sen", reason: "must not be negative (got -1)").description,
            "SCREENVIEW hit refused: field sen (sessionEventNumber) must not be negative (got -1)")
    }
}
