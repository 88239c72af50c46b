/// The optional parameters every hit may carry (the reference's "common parameters").
///
/// Each hit stores one of these in `commonFields` and exposes its fields as properties of its own
/// (`screen.userIp`), so the two spellings are the same storage. A value, unlike the hits: setting
/// `commonFields` copies a session's parameters onto a hit, and later changes to `session` stay there.
/// ```swift
/// let session = FSHitCommonFields(userLanguage: "fr", sessionNumber: 3)
/// let screen = FSScreen("checkout")
/// screen.commonFields = session
/// ```
public struct FSHitCommonFields: Sendable, Equatable {
    /// `uip`: the visitor's IP address.
    public var userIp: String?
    /// `sr`: the screen resolution, e.g. `"750 x 1334"`.
    public var screenResolution: String?
    /// `ul`: the visitor's language, e.g. `"fr"`.
    public var userLanguage: String?
    /// `cst`: when the current session started (a timestamp; not negative).
    public var currentSessionTimeStamp: Int64?
    /// `sn`: the session number (not negative).
    public var sessionNumber: Int?
    /// `sd`: the screen colour depth.
    public var screenColorDepth: String?
    /// `sen`: the number of this event in the session (not negative).
    public var sessionEventNumber: Int?

    /// Common fields with those given set, the others left out of the hit.
    public init(
        userIp: String? = nil,
        screenResolution: String? = nil,
        userLanguage: String? = nil,
        currentSessionTimeStamp: Int64? = nil,
        sessionNumber: Int? = nil,
        screenColorDepth: String? = nil,
        sessionEventNumber: Int? = nil
    ) {
        self.userIp = userIp
        self.screenResolution = screenResolution
        self.userLanguage = userLanguage
        self.currentSessionTimeStamp = currentSessionTimeStamp
        self.sessionNumber = sessionNumber
        self.screenColorDepth = screenColorDepth
        self.sessionEventNumber = sessionEventNumber
    }

    /// Adds the fields that are set; refuses negative session numbers and timestamps.
    func write(to writer: inout HitFieldWriter) throws(HitValidationError) {
        writer.optional("uip", userIp)
        writer.optional("sr", screenResolution)
        writer.optional("ul", userLanguage)
        try writer.count("cst", currentSessionTimeStamp)
        try writer.count("sn", sessionNumber)
        writer.optional("sd", screenColorDepth)
        try writer.count("sen", sessionEventNumber)
    }
}

/// A hit that carries `FSHitCommonFields`; gives it the reference's property names
/// (`userIp`, `sessionNumber`...) without each hit declaring them again.
///
/// Class-bound, like the reference's hits, so the setters work on a `let` (`screen.userIp = ...`).
public protocol FSHitWithCommonFields: FSTrackingProtocol, AnyObject {
    /// All the hit's common fields at once: setting it replaces every one of them.
    var commonFields: FSHitCommonFields { get set }
}

extension FSHitWithCommonFields {
    /// `uip`: the visitor's IP address.
    public var userIp: String? {
        get { commonFields.userIp }
        set { changeCommonFields { $0.userIp = newValue } }
    }

    /// `sr`: the screen resolution, e.g. `"750 x 1334"`.
    public var screenResolution: String? {
        get { commonFields.screenResolution }
        set { changeCommonFields { $0.screenResolution = newValue } }
    }

    /// `ul`: the visitor's language, e.g. `"fr"`.
    public var userLanguage: String? {
        get { commonFields.userLanguage }
        set { changeCommonFields { $0.userLanguage = newValue } }
    }

    /// `cst`: when the current session started (a timestamp; not negative).
    public var currentSessionTimeStamp: Int64? {
        get { commonFields.currentSessionTimeStamp }
        set { changeCommonFields { $0.currentSessionTimeStamp = newValue } }
    }

    /// `sn`: the session number (not negative).
    public var sessionNumber: Int? {
        get { commonFields.sessionNumber }
        set { changeCommonFields { $0.sessionNumber = newValue } }
    }

    /// `sd`: the screen colour depth.
    public var screenColorDepth: String? {
        get { commonFields.screenColorDepth }
        set { changeCommonFields { $0.screenColorDepth = newValue } }
    }

    /// `sen`: the number of this event in the session (not negative).
    public var sessionEventNumber: Int? {
        get { commonFields.sessionEventNumber }
        set { changeCommonFields { $0.sessionEventNumber = newValue } }
    }

    /// An SDK hit makes the change under its lock in one step: two tasks setting different fields
    /// of one hit both keep theirs (a read then a write of `commonFields` could lose one).
    private func changeCommonFields(_ change: (inout FSHitCommonFields) -> Void) {
        if let hit = self as? any WireEncodableHit {
            hit.updateCommonFields(change)
        } else {
            var fields = commonFields
            change(&fields)
            commonFields = fields
        }
    }
}
