import FlagshipStore
import Foundation

/// A page view (`PAGEVIEW`): send one each time the visitor opens a page in an embedded web view.
///
/// `location` must be an absolute URL with a scheme and a host (`https://example.com/cart`); for a
/// screen of the app, send `FSScreen`. Declare it with `let` and set its optional fields
/// (`let page = FSPage(url); page.userIp = ...`); `sendHit` takes a copy of the fields.
public final class FSPage: FSHitWithCommonFields, Sendable {
    /// The seal of `FSTrackingProtocol`: an SDK hit.
    public var sdkHitSeal: FSHitSeal { FSHitSeal() }

    struct Fields: HitFields {
        static let type = FSTypeTrack.PAGEVIEW
        var location: String
        var commonFields = FSHitCommonFields()
    }

    let fields: Locked<Fields>

    /// A page view of the absolute URL `location` (refused when sent if it is not one).
    public init(_ location: String) {
        fields = Locked(Fields(location: location))
    }

    public var type: FSTypeTrack { Fields.type }

    /// `dl`: the page's URL (required, absolute).
    public var location: String {
        get { self[field: \.location] }
        set { self[field: \.location] = newValue }
    }

    public var commonFields: FSHitCommonFields {
        get { self[field: \.commonFields] }
        set { self[field: \.commonFields] = newValue }
    }
}

extension FSPage: WireEncodableHit {}

extension FSPage.Fields {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        try writer.required("dl", location)
        guard Self.isAbsoluteURL(location) else {
            throw writer.invalid(
                "dl",
                "must be a valid absolute URL with a scheme and a host, e.g. https://example.com/page"
                    + " (got \"\(location)\")")
        }
    }

    private static func isAbsoluteURL(_ text: String) -> Bool {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, !scheme.isEmpty,
            let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}
