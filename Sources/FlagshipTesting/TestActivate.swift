import Flagship

/// An activate the SDK delivered (a flag read with exposure, PROTOCOL.md section 3), with the
/// flag and value its ids stand for.
///
/// ```swift
/// XCTAssertEqual(environment.activates.map(\.flagKey), ["btnColor"])
/// ```
public struct TestActivate: Sendable, Hashable {
    /// The request's `cid`.
    public let envId: String
    /// Every field of the entry, as sent (`vid`, `aid`, `caid`, `vaid`, `qt`).
    public let fields: [String: FSJSONValue]
    /// The flag and value of the variation, when the environment served it (any decision it
    /// answered, before a restart too); `nil` for ids it never gave.
    public let variation: TestVariation?

    init(envId: String, fields: [String: FSJSONValue], variation: TestVariation?) {
        self.envId = envId
        self.fields = fields
        self.variation = variation
    }

    /// The entry's field of that wire name; `nil` when it was not sent.
    public subscript(field: String) -> FSJSONValue? { fields[field] }

    /// `vid`: the visitor id (the authenticated id for an authenticated visitor).
    public var visitorId: String { fields["vid"]?.stringValue ?? "" }
    /// `aid`: the anonymous id of an authenticated visitor; `nil` otherwise.
    public var anonymousId: String? { fields["aid"]?.stringValue }
    /// `caid`: the variation group id.
    public var variationGroupId: String { fields["caid"]?.stringValue ?? "" }
    /// `vaid`: the variation id.
    public var variationId: String { fields["vaid"]?.stringValue ?? "" }
    /// The key of the flag the visitor saw; `nil` when the environment never served the variation.
    public var flagKey: String? { variation?.flagKey }
    /// The value the visitor saw; `nil` when the environment never served the variation.
    public var value: FSJSONValue? { variation?.value }
    /// The campaign of the variation (`c-<key>`); `nil` when the environment never served it.
    public var campaignId: String? { variation?.campaignId }
    /// The entry as JSON text, keys sorted.
    public var json: String { FSJSONValue.object(fields).description }
}
