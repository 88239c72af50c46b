import Flagship

/// A hit the SDK delivered to the events endpoint of a ``FlagshipTestEnvironment``: one entry of
/// a `BATCH` request, read back with its wire fields (PROTOCOL.md section 2).
///
/// ```swift
/// let actions = environment.hits.filter { $0.type == .event && !$0.isConsent }.map(\.eventAction)
/// ```
public struct TestHit: Sendable, Hashable {
    /// A hit's `t`: `EVENT`, `SCREENVIEW`...
    public struct HitType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The type as the hit spells it.
        public let rawValue: String

        /// The type of that spelling, one of the constants here or not.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// `EVENT`: an `FSEvent`, or the consent hit (`isConsent`).
        public static let event = HitType(rawValue: "EVENT")
        /// `SCREENVIEW`: an `FSScreen`.
        public static let screenView = HitType(rawValue: "SCREENVIEW")
        /// `PAGEVIEW`: an `FSPage`.
        public static let pageView = HitType(rawValue: "PAGEVIEW")
        /// `TRANSACTION`: an `FSTransaction`.
        public static let transaction = HitType(rawValue: "TRANSACTION")
        /// `ITEM`: an `FSItem`.
        public static let item = HitType(rawValue: "ITEM")
        /// `SEGMENT`: the context the SDK sends after a fetch in bucketing mode.
        public static let segment = HitType(rawValue: "SEGMENT")

        /// The raw value.
        public var description: String { rawValue }
    }

    /// The batch's `cid`.
    public let envId: String
    /// Every field of the entry, as sent (`vid`, `t`, `qt`, `ec`...).
    public let fields: [String: FSJSONValue]

    init(envId: String, fields: [String: FSJSONValue]) {
        self.envId = envId
        self.fields = fields
    }

    /// The entry's field of that wire name; `nil` when it was not sent.
    public subscript(field: String) -> FSJSONValue? { fields[field] }

    /// `t`: the hit's type; an empty raw value when the entry had none.
    public var type: HitType { HitType(rawValue: fields["t"]?.stringValue ?? "") }
    /// `vid`: the visitor id, or for an authenticated visitor its anonymous id.
    public var visitorId: String { fields["vid"]?.stringValue ?? "" }
    /// `cuid`: the authenticated visitor's id; `nil` for an anonymous visitor.
    public var customerId: String? { fields["cuid"]?.stringValue }
    /// The hit's entry as JSON text, keys sorted.
    public var json: String { FSJSONValue.object(fields).description }
    /// `qt`: milliseconds between the hit's creation and its send.
    public var queueTime: Int? { fields["qt"]?.intValue }

    /// The consent hit the SDK sends at a visitor's creation and at each `setConsent`.
    public var isConsent: Bool { type == .event && eventAction == "fs_consent" }

    /// `ec`: `Action Tracking` or `User Engagement`.
    public var eventCategory: String? { fields["ec"]?.stringValue }
    /// `ea`: the event's action.
    public var eventAction: String? { fields["ea"]?.stringValue }
    /// `el`: the event's label.
    public var eventLabel: String? { fields["el"]?.stringValue }
    /// `ev`: the event's value.
    public var eventValue: Int? { fields["ev"]?.intValue }
    /// `dl`: a screen's name or a page's URL.
    public var location: String? { fields["dl"]?.stringValue }
    /// `tid`: a transaction's or an item's transaction id.
    public var transactionId: String? { fields["tid"]?.stringValue }
    /// `ta`: the transaction's affiliation (the goal's name).
    public var affiliation: String? { fields["ta"]?.stringValue }
    /// `tr`: the transaction's revenue.
    public var revenue: Double? { fields["tr"]?.doubleValue }
    /// `tc`: the transaction's currency.
    public var currency: String? { fields["tc"]?.stringValue }
    /// `in`: the item's name.
    public var itemName: String? { fields["in"]?.stringValue }
    /// `ic`: the item's code (SKU).
    public var itemCode: String? { fields["ic"]?.stringValue }
    /// `iq`: the item's quantity.
    public var itemQuantity: Int? { fields["iq"]?.intValue }
    /// `ip`: the item's unit price.
    public var itemPrice: Double? { fields["ip"]?.doubleValue }
}
