import FlagshipStore

/// The category of an `FSEvent` (`ec`).
public enum FSCategoryEvent: String, Sendable, CaseIterable {
    /// Sent as `Action Tracking`: an action the visitor took, such as a click.
    case Action_Tracking = "Action Tracking"
    /// Sent as `User Engagement`: a measure of the visitor's engagement.
    case User_Engagement = "User Engagement"
}

/// Something the visitor did (`EVENT`): a click on a button, a subscription... `eventAction` is the
/// name the goal has in the reporting.
///
/// Declare the hit with `let` and set its optional fields; `sendHit` takes a copy of them, so
/// changing the hit afterwards changes nothing sent.
/// ```swift
/// let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "cta_Shop")
/// event.label = "cta_Shop_label"
/// event.eventValue = 1
/// ```
public final class FSEvent: FSHitWithCommonFields, Sendable {
    /// The seal of `FSTrackingProtocol`: an SDK hit.
    public var sdkHitSeal: FSHitSeal { FSHitSeal() }

    /// Flagship documents 500 bytes as the most an action or a label may hold (the Flutter SDK's
    /// `Event.action` and `Event.label` reference); longer ones are refused rather than cut.
    static let maxTextBytes = 500

    struct Fields: HitFields {
        static let type = FSTypeTrack.EVENT
        var eventCategory: FSCategoryEvent
        var eventAction: String
        var label: String?
        var eventValue: UInt?
        var commonFields = FSHitCommonFields()
    }

    let fields: Locked<Fields>

    /// An event of `eventCategory` named `eventAction` (required: empty, blank or past 500
    /// bytes, it is refused when sent).
    public init(eventCategory: FSCategoryEvent, eventAction: String) {
        fields = Locked(Fields(eventCategory: eventCategory, eventAction: eventAction))
    }

    public var type: FSTypeTrack { Fields.type }

    /// `ec`: the event's category.
    public var eventCategory: FSCategoryEvent {
        get { self[field: \.eventCategory] }
        set { self[field: \.eventCategory] = newValue }
    }

    /// `ea`: the event's name (required, at most 500 bytes in UTF-8).
    public var eventAction: String {
        get { self[field: \.eventAction] }
        set { self[field: \.eventAction] = newValue }
    }

    /// `el`: a description of the event (at most 500 bytes in UTF-8).
    public var label: String? {
        get { self[field: \.label] }
        set { self[field: \.label] = newValue }
    }

    /// `ev`: the event's value.
    public var eventValue: UInt? {
        get { self[field: \.eventValue] }
        set { self[field: \.eventValue] = newValue }
    }

    public var commonFields: FSHitCommonFields {
        get { self[field: \.commonFields] }
        set { self[field: \.commonFields] = newValue }
    }
}

extension FSEvent: WireEncodableHit {}

extension FSEvent.Fields {
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError) {
        writer.fields["ec"] = .string(eventCategory.rawValue)
        try writer.required("ea", eventAction, maxBytes: FSEvent.maxTextBytes)
        try writer.optional("el", label, maxBytes: FSEvent.maxTextBytes)
        try writer.count("ev", eventValue)
    }
}
