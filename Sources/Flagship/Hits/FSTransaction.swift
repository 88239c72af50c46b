import FlagshipStore

/// A completed transaction (`TRANSACTION`); its items follow as `FSItem` hits with the same
/// `transactionId`.
///
/// Amounts are `Float`, as in the reference: about 7 significant digits (every amount in cents
/// below 100,000 is exact). They are sent as the shortest decimal that reads back the same `Float`, so
/// `Float(19.99)` goes as 19.99, not the 19.989999771118164 a widening to `Double` would give.
/// Declare the hit with `let` and set its optional fields; `sendHit` takes a copy of them.
/// ```swift
/// let transaction = FSTransaction(transactionId: "T-1", affiliation: "BasketTransac")
/// transaction.revenue = 15
/// transaction.currency = "EUR"
/// ```
public final class FSTransaction: FSHitWithCommonFields, Sendable {
    /// The seal of `FSTrackingProtocol`: an SDK hit.
    public var sdkHitSeal: FSHitSeal { FSHitSeal() }

    struct Fields: HitFields {
        static let type = FSTypeTrack.TRANSACTION
        var transactionId: String
        var affiliation: String
        var revenue: Float?
        var shipping: Float?
        var tax: Float?
        var currency: String?
        var paymentMethod: String?
        var shippingMethod: String?
        var itemCount: Int?
        var couponCode: String?
        var commonFields = FSHitCommonFields()
    }

    let fields: Locked<Fields>

    /// A transaction of id `transactionId` counted toward the goal `affiliation` (both required:
    /// an empty or blank one is refused when sent).
    public init(transactionId: String, affiliation: String) {
        fields = Locked(Fields(transactionId: transactionId, affiliation: affiliation))
    }

    public var type: FSTypeTrack { Fields.type }

    /// `tid`: the transaction's unique id (required).
    public var transactionId: String {
        get { self[field: \.transactionId] }
        set { self[field: \.transactionId] = newValue }
    }

    /// `ta`: the transaction's name, the goal's name in the reporting (required).
    public var affiliation: String {
        get { self[field: \.affiliation] }
        set { self[field: \.affiliation] = newValue }
    }

    /// `tr`: total revenue, shipping and tax included (not negative).
    public var revenue: Float? {
        get { self[field: \.revenue] }
        set { self[field: \.revenue] = newValue }
    }

    /// `ts`: total shipping cost (not negative).
    public var shipping: Float? {
        get { self[field: \.shipping] }
        set { self[field: \.shipping] = newValue }
    }

    /// `tt`: total tax (not negative).
    public var tax: Float? {
        get { self[field: \.tax] }
        set { self[field: \.tax] = newValue }
    }

    /// `tc`: the currency of every amount, an ISO 4217 code in capitals (`"EUR"`).
    public var currency: String? {
        get { self[field: \.currency] }
        set { self[field: \.currency] = newValue }
    }

    /// `pm`: the payment method.
    public var paymentMethod: String? {
        get { self[field: \.paymentMethod] }
        set { self[field: \.paymentMethod] = newValue }
    }

    /// `sm`: the shipping method.
    public var shippingMethod: String? {
        get { self[field: \.shippingMethod] }
        set { self[field: \.shippingMethod] = newValue }
    }

    /// `icn`: the number of items (not negative).
    public var itemCount: Int? {
        get { self[field: \.itemCount] }
        set { self[field: \.itemCount] = newValue }
    }

    /// `tcc`: the coupon code used.
    public var couponCode: String? {
        get { self[field: \.couponCode] }
        set { self[field: \.couponCode] = newValue }
    }

    public var commonFields: FSHitCommonFields {
        get { self[field: \.commonFields] }
        set { self[field: \.commonFields] = newValue }
    }
}

extension FSTransaction: WireEncodableHit {}

extension FSTransaction.Fields {
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
