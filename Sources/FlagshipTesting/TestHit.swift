/// A hit the SDK delivered to the events endpoint of a ``FlagshipTestEnvironment``: one entry of
/// a `BATCH` request, read back with its wire fields (PROTOCOL.md section 2).
///
/// ```swift
/// let actions = environment.hits.filter { $0.type == .event && !$0.isConsent }.map(\.eventAction)
/// ```
public struct TestHit: Sendable, Hashable {
    /// A hit's `t`: `EVENT`, `SCREENVIEW`...
    public struct HitType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public static let event = HitType(rawValue: "EVENT")
        public static let screenView = HitType(rawValue: "SCREENVIEW")
        public static let pageView = HitType(rawValue: "PAGEVIEW")
        public static let transaction = HitType(rawValue: "TRANSACTION")
        public static let item = HitType(rawValue: "ITEM")
        public static let segment = HitType(rawValue: "SEGMENT")

        public var description: String { rawValue }
    }

    /// The batch's `cid`.
    public let envId: String
    /// Every field of the entry, as sent (`vid`, `t`, `qt`, `ec`...).
    public let fields: [String: TestValue]

    init(envId: String, fields: [String: TestValue]) {
        self.envId = envId
        self.fields = fields
    }

    public subscript(field: String) -> TestValue? { fields[field] }

    public var type: HitType { HitType(rawValue: fields["t"]?.stringValue ?? "") }
    /// `vid`: the visitor id, or for an authenticated visitor its anonymous id.
    public var visitorId: String { fields["vid"]?.stringValue ?? "" }
    /// `cuid`: the authenticated visitor's id; `nil` for an anonymous visitor.
    public var customerId: String? { fields["cuid"]?.stringValue }
    /// The hit's entry as JSON text, keys sorted.
    public var json: String { TestValue.object(fields).description }
    /// `qt`: milliseconds between the hit's creation and its send.
    public var queueTime: Int? { fields["qt"]?.intValue }

    /// The consent hit the SDK sends at a visitor's creation and at each `setConsent`.
    public var isConsent: Bool { type == .event && eventAction == "fs_consent" }

    /// `ec`: `Action Tracking` or `User Engagement`.
    public var eventCategory: String? { fields["ec"]?.stringValue }
    /// `ea`.
    public var eventAction: String? { fields["ea"]?.stringValue }
    /// `el`.
    public var eventLabel: String? { fields["el"]?.stringValue }
    /// `ev`.
    public var eventValue: Int? { fields["ev"]?.intValue }
    /// `dl`: a screen's name or a page's URL.
    public var location: String? { fields["dl"]?.stringValue }
    /// `tid`: a transaction's or an item's transaction id.
    public var transactionId: String? { fields["tid"]?.stringValue }
    /// `ta`.
    public var affiliation: String? { fields["ta"]?.stringValue }
    /// `tr`.
    public var revenue: Double? { fields["tr"]?.doubleValue }
    /// `tc`.
    public var currency: String? { fields["tc"]?.stringValue }
    /// `in`.
    public var itemName: String? { fields["in"]?.stringValue }
    /// `ic`.
    public var itemCode: String? { fields["ic"]?.stringValue }
    /// `iq`.
    public var itemQuantity: Int? { fields["iq"]?.intValue }
    /// `ip`.
    public var itemPrice: Double? { fields["ip"]?.doubleValue }
}
