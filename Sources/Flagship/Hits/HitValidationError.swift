/// Why `sendHit` refused a hit, with the hit's type and the wire field (`tid`, `ea`...): thrown as
/// `FlagshipError.invalidHit(_:)` by the awaited form, logged by the others. The hit is neither
/// cached nor sent.
///
/// A struct with a ``code`` to switch on and the details as properties, as ``FlagshipError`` is:
/// a new kind is a new code, not a breaking change.
public struct FSHitValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of refusal, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case missingField, invalidValue, notAnSDKHit
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A required field is empty (or only whitespace).
        public static let missingField = Code(.missingField)
        /// A field holds a value the collector would refuse or misread.
        public static let invalidValue = Code(.invalidValue)
        /// The hit is a type of the caller's that conforms to `FSTrackingProtocol`.
        public static let notAnSDKHit = Code(.notAnSDKHit)

        /// The code's name as written here (`missingField`...).
        public var description: String { base.rawValue }
    }

    /// The refusal with its details: the SDK's own form.
    package enum Reason: Sendable, Equatable {
        case missingField(hit: String, field: String)
        case invalidValue(hit: String, field: String, reason: String)
        case notAnSDKHit(typeName: String)
    }

    package let reason: Reason

    package init(_ reason: Reason) {
        self.reason = reason
    }

    /// A required field is empty (or only whitespace). `field` is the wire name, e.g. `tid`.
    public static func missingField(hit: String, field: String) -> FSHitValidationError {
        FSHitValidationError(.missingField(hit: hit, field: field))
    }

    /// A field holds a value the collector would refuse or misread, for `reason`.
    public static func invalidValue(hit: String, field: String, reason: String) -> FSHitValidationError {
        FSHitValidationError(.invalidValue(hit: hit, field: field, reason: reason))
    }

    /// The hit is a type of the caller's that conforms to `FSTrackingProtocol`.
    public static func notAnSDKHit(typeName: String) -> FSHitValidationError {
        FSHitValidationError(.notAnSDKHit(typeName: typeName))
    }

    /// What kind of refusal this is.
    public var code: Code {
        switch reason {
        case .missingField: .missingField
        case .invalidValue: .invalidValue
        case .notAnSDKHit: .notAnSDKHit
        }
    }

    /// The hit's wire type (`EVENT`, `TRANSACTION`...), `nil` for ``Code/notAnSDKHit``.
    public var hitType: String? {
        switch reason {
        case .missingField(let hit, _), .invalidValue(let hit, _, _): hit
        case .notAnSDKHit: nil
        }
    }

    /// The wire name of the field refused (`tid`, `ea`...), `nil` for ``Code/notAnSDKHit``.
    public var field: String? {
        switch reason {
        case .missingField(_, let field), .invalidValue(_, let field, _): field
        case .notAnSDKHit: nil
        }
    }

    /// Why the value was refused (``Code/invalidValue``), `nil` for the other kinds.
    public var why: String? {
        if case .invalidValue(_, _, let why) = reason { return why }
        return nil
    }

    /// The caller's type that is not a hit of the SDK (``Code/notAnSDKHit``), `nil` for the other kinds.
    public var typeName: String? {
        if case .notAnSDKHit(let typeName) = reason { return typeName }
        return nil
    }

    /// The hit's type, the field and why it was refused, as one sentence for a log.
    public var description: String {
        switch reason {
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
