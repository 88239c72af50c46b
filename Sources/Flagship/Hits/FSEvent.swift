/// The category of an `FSEvent` (`ec`).
public enum FSCategoryEvent: String, Sendable, CaseIterable {
    case Action_Tracking = "Action Tracking"
    case User_Engagement = "User Engagement"
}

/// Something the visitor did (`EVENT`): a click on a button, a subscription... `eventAction` is the
/// name the goal has in the reporting.
///
/// Hits are values: declare one with `var` to set its optional fields.
/// ```swift
/// var event = FSEvent(eventCategory: .Action_Tracking, eventAction: "cta_Shop")
/// event.label = "cta_Shop_label"
/// event.eventValue = 1
/// ```
public struct FSEvent: FSHitWithCommonFields, Equatable {
    /// Flagship documents 500 bytes as the most an action or a label may hold (the Flutter SDK's
    /// `Event.action` and `Event.label` reference); longer ones are refused rather than cut.
    static let maxTextBytes = 500

    /// `ec`: the event's category.
    public var eventCategory: FSCategoryEvent
    /// `ea`: the event's name (required, at most 500 bytes in UTF-8).
    public var eventAction: String
    /// `el`: a description of the event (at most 500 bytes in UTF-8).
    public var label: String?
    /// `ev`: the event's value.
    public var eventValue: UInt?
    public var commonFields = FSHitCommonFields()

    public var type: FSTypeTrack { .EVENT }

    public init(eventCategory: FSCategoryEvent, eventAction: String) {
        self.eventCategory = eventCategory
        self.eventAction = eventAction
    }
}

extension FSEvent: WireEncodableHit {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        writer.fields["ec"] = .string(eventCategory.rawValue)
        try writer.required("ea", eventAction, maxBytes: Self.maxTextBytes)
        try writer.optional("el", label, maxBytes: Self.maxTextBytes)
        try writer.count("ev", eventValue)
    }
}
