/// A completed transaction (`TRANSACTION`); its items follow as `FSItem` hits with the same
/// `transactionId`.
///
/// Amounts are `Double` where the reference has `Float`: a `Float` price reaches the JSON as noise
/// (`Float(19.99)` widens to 19.989999771118164), and integer literals still work
/// (`transaction.revenue = 15`).
/// Hits are values: declare one with `var` to set its optional fields.
/// ```swift
/// var transaction = FSTransaction(transactionId: "T-1", affiliation: "BasketTransac")
/// transaction.revenue = 15
/// transaction.currency = "EUR"
/// ```
public struct FSTransaction: FSHitWithCommonFields, Equatable {
    /// `tid`: the transaction's unique id (required).
    public var transactionId: String
    /// `ta`: the transaction's name, the goal's name in the reporting (required).
    public var affiliation: String
    /// `tr`: total revenue, shipping and tax included (not negative).
    public var revenue: Double?
    /// `ts`: total shipping cost (not negative).
    public var shipping: Double?
    /// `tt`: total tax (not negative).
    public var tax: Double?
    /// `tc`: the currency of every amount, an ISO 4217 code in capitals (`"EUR"`).
    public var currency: String?
    /// `pm`: the payment method.
    public var paymentMethod: String?
    /// `sm`: the shipping method.
    public var shippingMethod: String?
    /// `icn`: the number of items (not negative).
    public var itemCount: Int?
    /// `tcc`: the coupon code used.
    public var couponCode: String?
    public var commonFields = FSHitCommonFields()

    public var type: FSTypeTrack { .TRANSACTION }

    public init(transactionId: String, affiliation: String) {
        self.transactionId = transactionId
        self.affiliation = affiliation
    }
}

extension FSTransaction: WireEncodableHit {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        try writer.required("tid", transactionId)
        try writer.required("ta", affiliation)
        try writer.amount("tr", revenue)
        try writer.amount("ts", shipping)
        try writer.amount("tt", tax)
        if let currency, !Self.isCurrencyCode(currency) {
            // Refused, not uppercased: like any wrong value, the SDK says so rather than rewrite it.
            throw writer.invalid(
                "tc", "must be a 3-letter ISO 4217 currency code in capitals, e.g. EUR (got \"\(currency)\")")
        }
        writer.optional("tc", currency)
        writer.optional("pm", paymentMethod)
        writer.optional("sm", shippingMethod)
        try writer.count("icn", itemCount)
        writer.optional("tcc", couponCode)
    }

    private static func isCurrencyCode(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }
}
