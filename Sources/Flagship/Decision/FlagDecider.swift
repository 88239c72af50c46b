import Foundation

/// What a visitor's fetch asks for, whichever way the flags are decided.
struct DecisionRequest: Sendable, Equatable {
    var visitorId: String
    var anonymousId: String?
    /// The visitor's context, predefined `sdk_*` keys included.
    var context: [String: FSJSONValue]
    var hasConsented: Bool
    /// Variation group id → variation id: the variations the visitor already saw.
    var assignmentsHistory: [String: String]
}

/// One way of deciding a visitor's campaigns: the Decision API (API mode) or the bucketing
/// file on this machine (bucketing mode). The runtime picks one by the configured mode.
protocol FlagDecider: Sendable {
    func decide(_ request: DecisionRequest) async throws(DecisionError) -> DecisionResponse
    /// Whether each decision is reported with a SEGMENT hit (bucketing mode: the platform learns
    /// the visitor's context from it, as it never saw a decision request).
    var reportsSegment: Bool { get }
    /// Whether `authenticate`/`unauthenticate` may change the visitor's id now.
    var allowsExperienceContinuity: Bool { get }
}

extension DecisionAPIClient: FlagDecider {
    func decide(_ request: DecisionRequest) async throws(DecisionError) -> DecisionResponse {
        try await fetchCampaigns(visitorId: request.visitorId, anonymousId: request.anonymousId,
                                 context: request.context, hasConsented: request.hasConsented)
    }

    var reportsSegment: Bool { false }
    /// The Decision API decides continuity on its side.
    var allowsExperienceContinuity: Bool { true }
}
