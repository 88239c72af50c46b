import FlagshipStore

/// An item of a transaction (`ITEM`), sent after the `FSTransaction` with the same `transactionId`.
///
/// `price` is a `Float`, as in the reference (about 7 significant digits), sent as its shortest
/// decimal: `Float(19.99)` goes as 19.99. Declare the hit with `let` and set its optional fields
/// (`let item = FSItem(...); item.quantity = 2`); `sendHit` takes a copy of them.
public final class FSItem: FSHitWithCommonFields, Sendable {
    /// The seal of `FSTrackingProtocol`: an SDK hit.
    public var sdkHitSeal: FSHitSeal { FSHitSeal() }

    struct Fields: HitFields {
        static let type = FSTypeTrack.ITEM
        var transactionId: String
        var name: String
        var code: String
        var price: Float?
        var quantity: Int?
        var category: String?
        var commonFields = FSHitCommonFields()
    }

    let fields: Locked<Fields>

    /// An item of transaction `transactionId`, named `name`, of product code `code` (all three
    /// required: an empty or blank one is refused when sent).
    public init(transactionId: String, name: String, code: String) {
        fields = Locked(Fields(transactionId: transactionId, name: name, code: code))
    }

    public var type: FSTypeTrack { Fields.type }

    /// `tid`: the id of the item's transaction (required).
    public var transactionId: String {
        get { self[field: \.transactionId] }
        set { self[field: \.transactionId] = newValue }
    }

    /// `in`: the product's name (required).
    public var name: String {
        get { self[field: \.name] }
        set { self[field: \.name] = newValue }
    }

    /// `ic`: the product's code or SKU (required).
    public var code: String {
        get { self[field: \.code] }
        set { self[field: \.code] = newValue }
    }

    /// `ip`: the unit price (not negative).
    public var price: Float? {
        get { self[field: \.price] }
        set { self[field: \.price] = newValue }
    }

    /// `iq`: the quantity (not negative).
    public var quantity: Int? {
        get { self[field: \.quantity] }
        set { self[field: \.quantity] = newValue }
    }

    /// `iv`: the product's category.
    public var category: String? {
        get { self[field: \.category] }
        set { self[field: \.category] = newValue }
    }

    public var commonFields: FSHitCommonFields {
        get { self[field: \.commonFields] }
        set { self[field: \.commonFields] = newValue }
    }
}

extension FSItem: WireEncodableHit {}

extension FSItem.Fields {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        try writer.required("tid", transactionId)
        try writer.required("in", name)
        try writer.required("ic", code)
        try writer.amount("ip", price)
        try writer.count("iq", quantity)
        writer.optional("iv", category)
    }
}
