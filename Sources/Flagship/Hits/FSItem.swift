/// An item of a transaction (`ITEM`), sent after the `FSTransaction` with the same `transactionId`.
///
/// `price` is `Double` where the reference has `Float`, so that prices stay exact. Hits are values:
/// declare one with `var` to set its optional fields (`var item = FSItem(...); item.quantity = 2`).
public struct FSItem: FSHitWithCommonFields, Equatable {
    /// `tid`: the id of the item's transaction (required).
    public var transactionId: String
    /// `in`: the product's name (required).
    public var name: String
    /// `ic`: the product's code or SKU (required).
    public var code: String
    /// `ip`: the unit price (not negative).
    public var price: Double?
    /// `iq`: the quantity (not negative).
    public var quantity: Int?
    /// `iv`: the product's category.
    public var category: String?
    public var commonFields = FSHitCommonFields()

    public var type: FSTypeTrack { .ITEM }

    public init(transactionId: String, name: String, code: String) {
        self.transactionId = transactionId
        self.name = name
        self.code = code
    }
}

extension FSItem: WireEncodableHit {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        try writer.required("tid", transactionId)
        try writer.required("in", name)
        try writer.required("ic", code)
        try writer.amount("ip", price)
        try writer.count("iq", quantity)
        writer.optional("iv", category)
    }
}
