import Foundation

/// A page view (`PAGEVIEW`): send one each time the visitor opens a page in an embedded web view.
///
/// `location` must be an absolute URL with a scheme and a host (`https://example.com/cart`); for a
/// screen of the app, send `FSScreen`. Hits are values: declare one with `var` to set its optional
/// fields (`var page = FSPage(url); page.userIp = ...`).
public struct FSPage: FSHitWithCommonFields, Equatable {
    /// `dl`: the page's URL (required, absolute).
    public var location: String
    public var commonFields = FSHitCommonFields()

    public var type: FSTypeTrack { .PAGEVIEW }

    public init(_ location: String) {
        self.location = location
    }
}

extension FSPage: WireEncodableHit {
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
