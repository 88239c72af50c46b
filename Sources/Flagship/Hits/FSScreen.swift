import FlagshipStore

/// A screen view (`SCREENVIEW`): send one each time the visitor arrives on a new interface.
///
/// A hit is an object, as in the reference: declare it with `let` and set its optional fields.
/// `sendHit` takes a copy of the fields, so changing the hit afterwards changes nothing sent.
/// ```swift
/// let screen = FSScreen("loginScreen")
/// screen.userLanguage = "fr"
/// visitor.sendHit(screen)
/// ```
public final class FSScreen: FSHitWithCommonFields, Sendable {
    /// The seal of `FSTrackingProtocol`: an SDK hit.
    public var sdkHitSeal: FSHitSeal { FSHitSeal() }

    struct Fields: HitFields {
        static let type = FSTypeTrack.SCREENVIEW
        var location: String
        var commonFields = FSHitCommonFields()
    }

    let fields: Locked<Fields>

    /// A view of the screen named `location` (required: refused when sent if empty or blank).
    public init(_ location: String) {
        fields = Locked(Fields(location: location))
    }

    public var type: FSTypeTrack { Fields.type }

    /// `dl`: the screen's name (required, not empty).
    public var location: String {
        get { self[field: \.location] }
        set { self[field: \.location] = newValue }
    }

    public var commonFields: FSHitCommonFields {
        get { self[field: \.commonFields] }
        set { self[field: \.commonFields] = newValue }
    }
}

extension FSScreen: WireEncodableHit {}

extension FSScreen.Fields {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        try writer.required("dl", location)
    }
}
