import Foundation

/// The visitor an exposure was reported for, as `onVisitorExposed` receives it.
public struct FSVisitorExposed: Sendable {
    /// The visitor's id when the flag was exposed (its authenticated id, if it was).
    public let id: String
    /// The id the visitor had before `authenticate`, while it was authenticated; `nil` otherwise.
    public let anonymousId: String?
    let contextValues: [String: FSJSONValue]

    /// The visitor's context when the flag was exposed.
    public var context: [String: Any] { contextValues.mapValues(\.foundationValue) }

    init(id: String, anonymousId: String?, context: [String: FSJSONValue]) {
        self.id = id
        self.anonymousId = anonymousId
        self.contextValues = context
    }

    var jsonValue: FSJSONValue {
        .object(["id": .string(id), "anonymousId": anonymousId.map(FSJSONValue.string) ?? .null, "context": .object(contextValues)])
    }

    /// `{"id": ..., "anonymousId": ..., "context": {...}}`.
    public func toJson() -> String? { jsonValue.jsonString() }

    /// The same fields as `toJson()`, as a dictionary (`anonymousId` is `NSNull` when `nil`).
    public func toDictionary() -> [String: Any] { jsonValue.foundationValue as? [String: Any] ?? [:] }
}

/// The flag whose exposure was reported, as `onVisitorExposed` receives it.
public struct FSExposedFlag: Sendable {
    /// The flag's key.
    public let key: String
    let rawValue: FSJSONValue
    let rawDefaultValue: FSJSONValue
    /// The campaign and variation that gave the flag.
    public let metadata: FSFlagMetadata

    /// The flag's value, as `JSONSerialization` would give it.
    public var value: Any { rawValue.foundationValue }
    /// The default the caller gave when reading it (`NSNull` when none or not JSON).
    public var defaultValue: Any { rawDefaultValue.foundationValue }

    init(key: String, value: FSJSONValue, defaultValue: FSJSONValue, metadata: FSFlagMetadata) {
        self.key = key
        self.rawValue = value
        self.rawDefaultValue = defaultValue
        self.metadata = metadata
    }

    var jsonValue: FSJSONValue {
        .object(["key": .string(key), "value": rawValue, "defaultValue": rawDefaultValue, "metadata": metadata.jsonValue])
    }

    /// `{"key": ..., "value": ..., "defaultValue": ..., "metadata": {...}}`.
    public func toJson() -> String? { jsonValue.jsonString() }

    /// The same fields as `toJson()`, as a dictionary.
    public func toDictionary() -> [String: Any] { jsonValue.foundationValue as? [String: Any] ?? [:] }
}
