import Flagship

/// What one visitor does, as an app's request handler would: built with its context, flags
/// fetched, three flags read with their exposure (three activates), one event sent and awaited
/// (until the SDK has it on disk).
struct VisitorJourney: Sendable {
    let flagship: Flagship
    let latencies: LatencyLog

    /// `decided` is called once the visitor's flags are decided (`fetchFlags` returned).
    func run(visitor index: Int, decided: @Sendable () -> Void = {}) async throws {
        let visitor = await flagship.newVisitor(visitorId: SoakFixture.visitorId(index), hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: SoakFixture.context(index))
            .buildAsync()
        let clock = ContinuousClock()
        let fetchStart = clock.now
        try await visitor.fetchFlags()
        decided()
        let fetched = clock.now
        for key in SoakFixture.flagKeys {
            _ = visitor.getFlag(key: key).value(defaultValue: "none")
        }
        let sendStart = clock.now
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "purchase"))
        latencies.record(fetchFlags: fetched - fetchStart, sendHit: clock.now - sendStart)
    }
}
