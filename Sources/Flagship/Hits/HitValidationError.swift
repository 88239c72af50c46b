/// Why `sendHit` refused a hit, with the hit's type and the wire field (`tid`, `ea`...): thrown as
/// `FlagshipError.invalidHit(_:)` by the awaited form, logged by the others. The hit is neither
/// cached nor sent.
public enum FSHitValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A required field is empty (or only whitespace). `field` is the wire name, e.g. `tid`.
    case missingField(hit: String, field: String)
    /// A field holds a value the collector would refuse or misread.
    case invalidValue(hit: String, field: String, reason: String)
    /// The hit is a type of the caller's that conforms to `FSTrackingProtocol`.
    case notAnSDKHit(typeName: String)

    /// The hit's type, the field and why it was refused, as one sentence for a log.
    public var description: String {
        switch self {
        case let .missingField(hit, field):
            return "\(hit) hit refused: required field \(Self.named(field)) is missing or empty"
        case let .invalidValue(hit, field, reason):
            return "\(hit) hit refused: field \(Self.named(field)) \(reason)"
        case .notAnSDKHit(let typeName):
            return "hit of type \(typeName) refused: only the SDK's hits "
                + "(FSScreen, FSPage, FSTransaction, FSItem, FSEvent) can be sent"
        }
    }

    /// `tid (transactionId)`: the wire name with the property a developer sets.
    private static func named(_ field: String) -> String {
        propertyNames[field].map { "\(field) (\($0))" } ?? field
    }

    private static let propertyNames: [String: String] = [
        "dl": "location",
        "tid": "transactionId", "ta": "affiliation", "tr": "revenue", "ts": "shipping", "tt": "tax",
        "tc": "currency", "pm": "paymentMethod", "sm": "shippingMethod", "icn": "itemCount",
        "tcc": "couponCode",
        "in": "name", "ic": "code", "ip": "price", "iq": "quantity", "iv": "category",
        "ec": "eventCategory", "ea": "eventAction", "el": "label", "ev": "eventValue",
        "uip": "userIp", "sr": "screenResolution", "ul": "userLanguage", "cst": "currentSessionTimeStamp",
        "sn": "sessionNumber", "sd": "screenColorDepth", "sen": "sessionEventNumber",
    ]
}

/// The SDK's own name for it.
package typealias HitValidationError = FSHitValidationError
