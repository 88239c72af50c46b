import Foundation

/// The hit cache document, version 1: one value of the dictionary `FSHitCacheDelegate.cacheHits`
/// receives. `content` holds the wire fields, so a replay sends exactly what would have been sent.
package struct HitCacheDocument: Sendable, Equatable {
    static let currentVersion = 1
    /// The wire types a hit cache may hold.
    static let knownTypes: Set<String> = ["SCREENVIEW", "PAGEVIEW", "TRANSACTION", "ITEM", "EVENT", "SEGMENT", "ACTIVATE"]

    package var visitorId: String
    package var anonymousId: String?
    package var type: String
    /// Creation time, unix milliseconds: the base of `qt` and of expiry.
    package var time: Int64
    package var content: [String: FSJSONValue]

    package init(visitorId: String, anonymousId: String? = nil, type: String, time: Int64, content: [String: FSJSONValue]) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.type = type
        self.time = time
        self.content = content
    }

    /// The consent hit (`ea: fs_consent`) is the one hit kept when a visitor withdraws consent.
    package var isConsentHit: Bool {
        type == "EVENT" && content["ea"]?.stringValue == "fs_consent"
    }

    package var jsonValue: FSJSONValue {
        .object([
            "version": .int(Int64(Self.currentVersion)),
            "data": .object([
                "visitorId": .string(visitorId),
                "anonymousId": anonymousId.map(FSJSONValue.string) ?? .null,
                "type": .string(type),
                "time": .int(time),
                "content": .object(content),
            ]),
        ])
    }
}

/// Why a hit cache document was refused.
package enum HitCacheDocumentError: Error, Equatable, CustomStringConvertible {
    case unsupportedVersion(String)
    case missingField(String)
    case wrongType(field: String, expected: String)
    case unknownHitType(String)
    case notJSON(String)

    package var description: String {
        switch self {
        case .unsupportedVersion(let version):
            return "version \(version) is not \(HitCacheDocument.currentVersion)"
        case .missingField(let field):
            return "required field \(field) is missing"
        case let .wrongType(field, expected):
            return "field \(field) must be \(expected)"
        case .unknownHitType(let type):
            return "hit type '\(type)' is not one of \(HitCacheDocument.knownTypes.sorted().joined(separator: ", "))"
        case .notJSON(let reason):
            return "the hit is not representable as JSON (\(reason))"
        }
    }
}

extension HitCacheDocument {
    /// Reads and checks a document: version 1, `data.visitorId`, `data.type` (a known type),
    /// `data.time` (an integer) and `data.content` (an object) are required.
    package init(_ value: FSJSONValue) throws(HitCacheDocumentError) {
        guard let version = value["version"] else { throw .missingField("version") }
        guard version.int64Value == Int64(Self.currentVersion) else {
            throw .unsupportedVersion(version.jsonString())
        }
        guard let data = value["data"] else { throw .missingField("data") }
        guard data.objectValue != nil else { throw .wrongType(field: "data", expected: "an object") }
        func required(_ key: String) throws(HitCacheDocumentError) -> FSJSONValue {
            guard let field = data[key], !field.isNull else { throw .missingField("data.\(key)") }
            return field
        }
        guard let visitorId = try required("visitorId").stringValue, !visitorId.isEmpty else {
            throw .wrongType(field: "data.visitorId", expected: "a non-empty string")
        }
        guard let type = try required("type").stringValue else { throw .wrongType(field: "data.type", expected: "a string") }
        guard Self.knownTypes.contains(type) else { throw .unknownHitType(type) }
        guard let time = try required("time").int64Value else {
            throw .wrongType(field: "data.time", expected: "an integer (unix milliseconds)")
        }
        guard let content = try required("content").objectValue else {
            throw .wrongType(field: "data.content", expected: "an object")
        }
        let anonymousId: String?
        switch data["anonymousId"] {
        case nil, .null?: anonymousId = nil
        case .string(let id)?: anonymousId = id
        default: throw .wrongType(field: "data.anonymousId", expected: "a string or null")
        }
        self.init(visitorId: visitorId, anonymousId: anonymousId, type: type, time: time, content: content)
    }

    /// Reads a document as a custom cache or the SDK hands it over: a `[String: Any]`.
    package init(dictionary: [String: Any]) throws(HitCacheDocumentError) {
        let value: FSJSONValue
        do {
            value = try FSJSONValue(any: dictionary)
        } catch {
            throw .notJSON(String(describing: error))
        }
        try self.init(value)
    }

    /// The document as `FSHitCacheDelegate` exchanges it.
    package var dictionary: [String: Any] {
        (jsonValue.foundationValue as? [String: Any]) ?? [:]
    }
}
