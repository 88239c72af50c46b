/// A screen view (`SCREENVIEW`): send one each time the visitor arrives on a new interface.
///
/// Hits are values, not the reference's classes: declare one with `var` to set its optional fields.
/// ```swift
/// var screen = FSScreen("loginScreen")
/// screen.userLanguage = "fr"
/// visitor.sendHit(screen)
/// ```
public struct FSScreen: FSHitWithCommonFields, Equatable {
    /// `dl`: the screen's name (required, not empty).
    public var location: String
    public var commonFields = FSHitCommonFields()

    public var type: FSTypeTrack { .SCREENVIEW }

    public init(_ location: String) {
        self.location = location
    }
}

extension FSScreen: WireEncodableHit {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        try writer.required("dl", location)
    }
}
