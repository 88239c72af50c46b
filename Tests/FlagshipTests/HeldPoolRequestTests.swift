import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// A visitor's request and the background delivery of what it sent go on while the app's long
/// work holds every thread of the global dispatch pool, which on Linux is also the pool Swift's
/// global executor runs tasks on. The request is awaited from a task on a thread of the test's
/// own, and the local server answers on another, so that only the SDK is in question: its store
/// queues, its HTTP answers (FoundationNetworking's default delegate queue waited for the pool:
/// every exchange timed out), and the batch timer's sleep on its background thread (`Task.sleep`
/// is woken through the global executor: the timer stood still). `SDKQueuesTests` checks each of
/// the SDK's queues alone.
final class HeldPoolRequestTests: SDKTestCase {
    func testAVisitorsRequestAndTheBatchTimersDeliveryGoOnWhileLongWorkHoldsTheGlobalPool() throws {
        let answering = ThreadExecutor(name: "io.flagship.test.server")
        let awaiting = ThreadExecutor(name: "io.flagship.test.awaiting")
        defer {
            answering.shutdown()
            awaiting.shutdown()
        }
        var configuration = LocalFlagshipServer.Configuration(envId: Self.envId, apiKey: Self.apiKey,
                                                              decision: .echoingVisitorId(Self.decision))
        configuration.answeringExecutor = answering
        let server = LocalFlagshipServer(configuration)
        try server.start()
        defer { server.stop() }
        // The consent hit and the event, fewer than the pool's ten: the batch timer sends them
        // (an exposure would start a round at once).
        start(configBuilder(timeout: 2_000, server: server).DecisionApi()
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 10, batchIntervalTimer: 0.2)))

        let release = holdTheGlobalPool()
        defer { release() }
        let flagship = flagship!
        let served = OneShot<Result<FSVisitor, any Error>>()
        Task(executorPreference: awaiting) {
            do {
                let visitor = await flagship.newVisitor(visitorId: "held", hasConsented: true, instanceType: .NEW_INSTANCE)
                    .buildAsync()
                try await visitor.fetchFlags()
                try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "while-held"))
                served.fulfil(.success(visitor))
            } catch {
                served.fulfil(.failure(error))
            }
        }
        let visitor = try XCTUnwrap(served.value(blockingUntil: .now() + 3), "the request did not end within 3 s while the pool was held").get()
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        XCTAssertTrue(waitUntil(3) { server.hits.contains { $0["ea"]?.stringValue == "while-held" } },
                      "the batch timer did not deliver the event within 3 s while the pool was held")

        let flag = visitor.getFlag(key: "btnColor")
        XCTAssertEqual(flag.value(defaultValue: "none", visitorExposed: false), "red")
        flag.visitorExposed()
        XCTAssertTrue(waitUntil(3) { !server.activates.isEmpty }, "the exposure was not delivered within 3 s while the pool was held")
    }

    /// Polls `condition` from the test's thread every 10 ms, for `seconds` at most.
    private func waitUntil(_ seconds: TimeInterval, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !condition(), Date() < end { usleep(10_000) }
        return condition()
    }
}
