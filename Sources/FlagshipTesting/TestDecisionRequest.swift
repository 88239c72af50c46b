import Flagship

/// A `fetchFlags()` as the in-process Decision API received and answered it.
public struct TestDecisionRequest: Sendable, Hashable {
    /// The visitor id sent (the authenticated id for an authenticated visitor).
    public let visitorId: String
    /// The anonymous id of an authenticated visitor (experience continuity); `nil` otherwise.
    public let anonymousId: String?
    /// The context sent: the app's keys and the SDK's own (`sdk_osName`, `fs_client`...).
    public let context: [String: FSJSONValue]
    /// The visitor's consent, as the request said it.
    public let hasConsented: Bool
    /// The flags of the answer, by key; empty in panic mode.
    public let flags: [String: FSJSONValue]
    /// Whether the answer was a panic (`FlagshipTestData.panic`).
    public let panic: Bool

    init(visitorId: String, anonymousId: String?, context: [String: FSJSONValue], hasConsented: Bool,
                flags: [String: FSJSONValue], panic: Bool) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.context = context
        self.hasConsented = hasConsented
        self.flags = flags
        self.panic = panic
    }
}
