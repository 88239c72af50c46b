import Foundation
import Flagship

/// The bodies of the fuzz targets under `Fuzz/`, kept here so that the fuzzers and
/// `FuzzRegressionTests` run the same code on an input, and so that they reach the decoders
/// without those being widened for them.
///
/// Each target reads one input the way the SDK meets such bytes, then checks what must hold
/// whatever the input (a round trip is stable, a decision is deterministic...). A broken invariant
/// is thrown as a ``Violation``: a fuzzer turns it into a crash, a test into a failure. An input
/// the SDK refuses is no violation: refusing is what it should do with most of them.
package enum FuzzEntry: String, CaseIterable, Sendable {
    /// A Decision API body (`DecisionResponse`).
    case decisionResponse = "FuzzDecisionResponse"
    /// A bucketing file, then decisions for a visitor: `<file JSON>` NUL `<visitor JSON>`, where the
    /// visitor part (optional) is `{"visitorId": "...", "context": {...}, "history": {...}}`.
    case bucketing = "FuzzBucketing"
    /// A visitor cache document, as `lookupVisitor` gives it back.
    case visitorCacheDocument = "FuzzVisitorCacheDocument"
    /// A hit cache document, as the hit cache gives it back.
    case hitCacheDocument = "FuzzHitCacheDocument"
    /// Context values and hits built from bytes (see ``FuzzBytes``), validated and encoded.
    case validation = "FuzzValidation"
    /// The store's compiled form of a bucketing file, as a start reads it back: the bytes with the
    /// checksum they need written in (so that the reading past it is reached), then decisions.
    case compiledBucketing = "FuzzCompiledBucketing"
    /// A store file as a prune's read ahead meets it (`IndexLeaves`): the leaves of the B-trees
    /// whose roots are its first pages, found from their interior pages, whatever those hold.
    case indexLeaves = "FuzzIndexLeaves"

    package enum Outcome: Sendable, Equatable {
        /// The SDK read (or validated) the input, and every invariant held.
        case accepted
        /// The SDK refused the input, as it should refuse anything that is not what it expects.
        case refused
    }

    /// An invariant that did not hold: a bug, whatever the input was.
    package struct Violation: Error, CustomStringConvertible {
        package let description: String
    }

    package func run(_ input: Data) throws(Violation) -> Outcome {
        switch self {
        case .decisionResponse: return try Self.decisionResponse(input)
        case .bucketing: return try Self.bucketing(input)
        case .visitorCacheDocument: return try Self.visitorCacheDocument(input)
        case .hitCacheDocument: return try Self.hitCacheDocument(input)
        case .validation: return try Self.validation(input)
        case .compiledBucketing: return try Self.compiledBucketing(input)
        case .indexLeaves: return try Self.indexLeaves(input)
        }
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) throws(Violation) {
        guard condition else { throw Violation(description: message()) }
    }
}

// MARK: - Decision API response

extension FuzzEntry {
    private static func decisionResponse(_ input: Data) throws(Violation) -> Outcome {
        guard let response = try? DecisionResponse(json: input) else { return .refused }
        // Counted as the response reads them: tolerantly (one unreadable flag value costs that flag only).
        let entries = (try? TolerantJSON(input))?.value["campaigns"].flatMap { value -> [FSJSONValue]? in
            if case .array(let entries) = value { return entries }
            return nil
        } ?? []
        try check(response.campaigns.count + response.skippedCampaigns.count == entries.count,
                  "\(entries.count) campaigns gave \(response.campaigns.count) kept and \(response.skippedCampaigns.count) skipped")
        for campaign in response.campaigns {
            try check(!campaign.campaignId.isEmpty && !campaign.variationGroupId.isEmpty && !campaign.variationId.isEmpty,
                      "a kept campaign lacks an id: \(campaign)")
        }
        let flags = FlagEntry.merge(response.campaigns)
        try check(flags.count <= FlagEntry.slotCount(response.campaigns), "more flags than slots")
        try check(flags.values.allSatisfy { $0.slot < FlagEntry.slotCount(response.campaigns) }, "a flag's slot is out of range")
        // The campaigns go to the visitor cache as they are: they must come back from it equal.
        let document = VisitorCacheDocument(visitorId: response.visitorId ?? "visitor", campaigns: response.campaigns)
        try checkCacheRoundTrip(document)
        return .accepted
    }
}

// MARK: - Cache documents

extension FuzzEntry {
    private static func visitorCacheDocument(_ input: Data) throws(Violation) -> Outcome {
        guard let document = try? VisitorCacheDocument(data: input) else { return .refused }
        try checkCacheRoundTrip(document)
        let other = document.visitorId + "-other"
        let asOther = Result { () throws(VisitorCacheDocumentError) in try VisitorCacheDocument(data: input, expectedVisitorId: other) }
        guard case .failure(.wrongVisitor(other, document.visitorId)) = asOther else {
            throw Violation(description: "a document of \(document.visitorId) looked up for \(other) gave \(asOther)")
        }
        return .accepted
    }

    /// Written and read again, a document is the same, and its text a fixed point.
    private static func checkCacheRoundTrip(_ document: VisitorCacheDocument) throws(Violation) {
        let text: Data
        let reread: VisitorCacheDocument
        do {
            text = document.jsonData()
            reread = try VisitorCacheDocument(data: text, expectedVisitorId: document.visitorId)
        } catch {
            throw Violation(description: "a visitor cache document could not be written and read back: \(error)")
        }
        // JSON keeps numbers, not whether 3 was written 3.0: values compare as JSON.
        var sameValues = reread
        sameValues.context = document.context
        for index in sameValues.campaigns.indices where index < document.campaigns.count {
            sameValues.campaigns[index].flags = document.campaigns[index].flags
        }
        try check(sameValues == document && sameJSON(.object(reread.context), .object(document.context))
                  && zip(reread.campaigns, document.campaigns).allSatisfy { sameJSON(.object($0.flags), .object($1.flags)) },
                  "a visitor cache document changed through its JSON:\n\(document)\n\(reread)")
        try check(reread.jsonData() == text, "a visitor cache document's JSON is not stable")
    }

    private static func hitCacheDocument(_ input: Data) throws(Violation) -> Outcome {
        guard let value = try? FSJSONValue(parsing: input), let document = try? HitCacheDocument(value) else { return .refused }
        // The SDK's own cache stores `jsonString()`; a custom cache gets and gives back `dictionary`.
        let fromText: HitCacheDocument
        let fromDictionary: HitCacheDocument
        do {
            fromText = try HitCacheDocument(FSJSONValue(parsing: Data(document.jsonValue.jsonString().utf8)))
            fromDictionary = try HitCacheDocument(dictionary: document.dictionary)
        } catch {
            throw Violation(description: "a hit cache document could not be read back: \(error)")
        }
        try check(sameJSON(fromText.jsonValue, document.jsonValue),
                  "a hit cache document changed through its JSON text:\n\(document)\n\(fromText)")
        try check(fromDictionary == document, "a hit cache document changed through its dictionary:\n\(document)\n\(fromDictionary)")
        _ = document.isConsentHit
        return .accepted
    }

    /// Equal as JSON: a number written `3.0` may be read back as the integer 3, and the other way;
    /// a double written -1.224979098644775e+18 may be read back as the integer those digits say,
    /// which reads as the same double.
    static func sameJSON(_ left: FSJSONValue, _ right: FSJSONValue) -> Bool {
        switch (left, right) {
        case (.int(let int), .double(let double)), (.double(let double), .int(let int)):
            return Double(int) == double
        case (.array(let l), .array(let r)):
            return l.count == r.count && zip(l, r).allSatisfy { sameJSON($0, $1) }
        case (.object(let l), .object(let r)):
            return l.count == r.count && l.allSatisfy { key, value in r[key].map { sameJSON(value, $0) } ?? false }
        default:
            return left == right
        }
    }
}

// MARK: - Context and hit validation

extension FuzzEntry {
    private static func validation(_ input: Data) throws(Violation) -> Outcome {
        var bytes = FuzzBytes(input)
        var context: [String: FSJSONValue] = [:]
        var accepted = false
        while !bytes.isEmpty {
            if bytes.byte() % 2 == 0 {
                let key = bytes.string()
                if let value = try contextValue(&bytes) {
                    context[key] = value
                    accepted = true
                }
            } else if try hit(&bytes) {
                accepted = true
            }
        }
        // The context goes to the Decision API as JSON text and, in bucketing mode, as a SEGMENT hit.
        try checkWire(.object(context), "a context")
        try checkWire(.object(SDKHit.segment(context: context)), "a segment hit")
        return accepted ? .accepted : .refused
    }

    /// A value of the kind the next byte names, validated; `nil` when refused.
    private static func contextValue(_ bytes: inout FuzzBytes) throws(Violation) -> FSJSONValue? {
        let raw: Any
        let expected: FSJSONValue?
        switch bytes.byte() % 10 {
        case 0: let string = bytes.string(); (raw, expected) = (string, .string(string))
        case 1: let bool = bytes.byte() % 2 == 0; (raw, expected) = (bool, .bool(bool))
        case 2: let int = Int(truncatingIfNeeded: bytes.int64()); (raw, expected) = (int, .int(Int64(int)))
        case 3:
            let double = bytes.double()
            (raw, expected) = (double, double.isFinite ? .double(double) : nil)
        case 4:
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: bytes.int64()))
            (raw, expected) = (float, float.isFinite ? .double(Double(float)) : nil)
        case 5: let int = Int8(truncatingIfNeeded: bytes.int64()); (raw, expected) = (int, .int(Int64(int)))
        case 6:
            let int = UInt64(bitPattern: bytes.int64())
            (raw, expected) = (int, Int64(exactly: int).map(FSJSONValue.int))
        case 7:
            let double = bytes.double()
            (raw, expected) = (NSNumber(value: double), double.isFinite ? .double(double) : nil)
        case 8: let bool = bytes.byte() % 2 == 0; (raw, expected) = (NSNumber(value: bool), .bool(bool))
        default: (raw, expected) = ([bytes.string()], nil)
        }
        switch ContextValue.validate(raw) {
        case .success(let value):
            try check(expected.map { sameJSON($0, value) } ?? false, "context value \(raw) was accepted as \(value)")
            return value
        case .failure(let error):
            try check(expected == nil, "context value \(raw) was refused: \(error.reason)")
            return nil
        }
    }

    /// A hit of the kind the next byte names, with fields from the bytes, validated: whether it was accepted.
    private static func hit(_ bytes: inout FuzzBytes) throws(Violation) -> Bool {
        let (hit, required) = makeHit(from: &bytes)
        let encoded: (type: FSTypeTrack, fields: [String: FSJSONValue])
        do {
            encoded = try encodedForSending(hit)
        } catch {
            return false
        }
        try checkEncoded(encoded.fields, of: hit, required: required)
        return true
    }

    /// A hit of the kind the next byte names, with its fields and the common ones from the bytes, and
    /// the fields its encoding must hold as text.
    private static func makeHit(from bytes: inout FuzzBytes) -> (hit: any FSHitWithCommonFields, required: [String]) {
        let hit: any FSHitWithCommonFields
        let required: [String]
        switch bytes.byte() % 5 {
        case 0:
            hit = FSScreen(bytes.string())
            required = ["dl"]
        case 1:
            hit = FSPage(bytes.string())
            required = ["dl"]
        case 2:
            let transaction = FSTransaction(transactionId: bytes.string(), affiliation: bytes.string())
            if bytes.flag() { transaction.revenue = bytes.float() }
            if bytes.flag() { transaction.shipping = bytes.float() }
            if bytes.flag() { transaction.tax = bytes.float() }
            if bytes.flag() { transaction.currency = bytes.string() }
            if bytes.flag() { transaction.itemCount = Int(truncatingIfNeeded: bytes.int64()) }
            if bytes.flag() { transaction.couponCode = bytes.string() }
            hit = transaction
            required = ["tid", "ta"]
        case 3:
            let item = FSItem(transactionId: bytes.string(), name: bytes.string(), code: bytes.string())
            if bytes.flag() { item.price = bytes.float() }
            if bytes.flag() { item.quantity = Int(truncatingIfNeeded: bytes.int64()) }
            if bytes.flag() { item.category = bytes.string() }
            hit = item
            required = ["tid", "in", "ic"]
        default:
            let event = FSEvent(eventCategory: bytes.flag() ? .Action_Tracking : .User_Engagement, eventAction: bytes.string())
            if bytes.flag() { event.label = bytes.string() }
            if bytes.flag() { event.eventValue = UInt(truncatingIfNeeded: bytes.int64()) }
            hit = event
            required = ["ea"]
        }
        if bytes.flag() { hit.userIp = bytes.string() }
        if bytes.flag() { hit.sessionNumber = Int(truncatingIfNeeded: bytes.int64()) }
        if bytes.flag() { hit.currentSessionTimeStamp = bytes.int64() }
        if bytes.flag() { hit.userLanguage = bytes.string() }
        return (hit, required)
    }

    /// An accepted hit's encoded fields: its type, its `required` fields as text that is not blank,
    /// numbers finite and not negative, nothing but numbers and strings, and JSON that reads back the same.
    private static func checkEncoded(_ fields: [String: FSJSONValue], of hit: any FSHitWithCommonFields,
                                     required: [String]) throws(Violation) {
        try check(fields["t"] == .string(hit.type.rawValue), "\(hit.type) hit encoded with t = \(String(describing: fields["t"]))")
        for field in required {
            let text = fields[field]?.stringValue
            try check(text.map { !$0.allSatisfy(\.isWhitespace) } ?? false, "\(hit.type) hit accepted without its \(field)")
        }
        for (field, value) in fields {
            switch value {
            case .int(let number): try check(number >= 0, "\(hit.type) hit accepted with \(field) = \(number)")
            case .double(let number): try check(number.isFinite && number >= 0, "\(hit.type) hit accepted with \(field) = \(number)")
            case .string: break
            default: throw Violation(description: "\(hit.type) hit has \(field) = \(value)")
            }
        }
        try checkWire(.object(fields), "a \(hit.type) hit")
    }

    /// What the SDK writes as JSON text reads back as the same JSON.
    private static func checkWire(_ value: FSJSONValue, _ what: String) throws(Violation) {
        let text = value.jsonString()
        guard let parsed = try? FSJSONValue(parsing: Data(text.utf8)) else {
            throw Violation(description: "\(what) was written as JSON that does not parse: \(text)")
        }
        try check(sameJSON(parsed, value), "\(what) changed through its JSON text: \(value) was written \(text), read back \(parsed)")
    }
}

/// Values taken from the front of a fuzzer's input; past its end, zeros and empty strings.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var index = 0

    init(_ data: Data) {
        bytes = Array(data)
    }

    var isEmpty: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func flag() -> Bool {
        byte() & 1 == 1
    }

    /// A length byte, then that many bytes as UTF-8 (invalid sequences repaired, as a `String` would be).
    mutating func string() -> String {
        let count = min(Int(byte()), bytes.count - min(index, bytes.count))
        defer { index += count }
        return String(decoding: bytes[index..<(index + count)], as: UTF8.self)
    }

    mutating func int64() -> Int64 {
        (0..<8).reduce(0) { value, _ in value << 8 | Int64(byte()) }
    }

    mutating func double() -> Double {
        Double(bitPattern: UInt64(bitPattern: int64()))
    }

    mutating func float() -> Float {
        Float(bitPattern: UInt32(truncatingIfNeeded: int64()))
    }
}
