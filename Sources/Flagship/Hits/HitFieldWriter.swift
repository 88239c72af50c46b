/// Collects a hit's wire fields, checking each value as it goes, so that every hit states its
/// fields once and the same rule (non-empty, not negative, finite) is written once.
struct HitFieldWriter {
    let hit: FSTypeTrack
    var fields: [String: FSJSONValue] = [:]

    /// A required string: refused when empty or only whitespace, or longer than `maxBytes` in UTF-8.
    mutating func required(_ key: String, _ value: String, maxBytes: Int? = nil) throws(HitValidationError) {
        guard !value.allSatisfy(\.isWhitespace) else { throw .missingField(hit: hit.rawValue, field: key) }
        try checkLength(key, value, maxBytes: maxBytes)
        fields[key] = .string(value)
    }

    /// An optional string, sent as given when set.
    mutating func optional(_ key: String, _ value: String?) {
        if let value { fields[key] = .string(value) }
    }

    /// A string no longer than `maxBytes` in UTF-8.
    mutating func optional(_ key: String, _ value: String?, maxBytes: Int) throws(HitValidationError) {
        guard let value else { return }
        try checkLength(key, value, maxBytes: maxBytes)
        fields[key] = .string(value)
    }

    private func checkLength(_ key: String, _ value: String, maxBytes: Int?) throws(HitValidationError) {
        guard let maxBytes else { return }
        let bytes = value.utf8.count
        guard bytes <= maxBytes else {
            throw invalid(key, "must be at most \(maxBytes) bytes in UTF-8 (got \(bytes))")
        }
    }

    /// An amount of money: a finite number, not negative, sent as a JSON number.
    ///
    /// Sent as the shortest decimal that reads back the same `Float` (its `description`): widening
    /// the binary value would send `Float(19.99)` as 19.989999771118164.
    mutating func amount(_ key: String, _ value: Float?) throws(HitValidationError) {
        guard let value else { return }
        guard value.isFinite else { throw invalid(key, "must be a finite number (got \(value))") }
        guard value >= 0 else { throw invalid(key, "must not be negative (got \(value))") }
        fields[key] = .double(Double(value.description) ?? Double(value))
    }

    /// A count, value or timestamp: not negative and within a JSON integer (`Int64`).
    mutating func count<Number: BinaryInteger>(_ key: String, _ value: Number?) throws(HitValidationError) {
        guard let value else { return }
        guard value >= 0 else { throw invalid(key, "must not be negative (got \(value))") }
        guard let integer = Int64(exactly: value) else {
            throw invalid(key, "must be at most \(Int64.max) (got \(value))")
        }
        fields[key] = .int(integer)
    }

    func invalid(_ key: String, _ reason: String) -> HitValidationError {
        .invalidValue(hit: hit.rawValue, field: key, reason: reason)
    }
}
