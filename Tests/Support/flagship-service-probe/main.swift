#if ServiceLifecycle
import Flagship
import FlagshipServiceLifecycle
import Foundation
import Logging
import ServiceLifecycle

// The lifecycle tests' child process: `FlagshipService` and a flow of awaited hits in one
// `ServiceGroup` that SIGTERM shuts down gracefully.
//
//   flagship-service-probe <decision URL> <events URL> <database file>
//
// Prints `ack <n>` once `try await sendHit` of event `hit-<n>` returned (the hit is committed),
// `closed` when the group has ended, and exits 0.

let arguments = CommandLine.arguments
guard arguments.count == 4, let decision = URL(string: arguments[1]), let events = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: flagship-service-probe <decision URL> <events URL> <database file>\n".utf8))
    exit(2)
}

/// Writes a line to stdout at once (no buffering: the test reads it while this runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Sends awaited events, one after the other, until the group shuts down gracefully.
struct TrafficService: Service {
    let flagship: Flagship
    let sdk: FlagshipService

    func run() async throws {
        try await sdk.started()
        let visitor = await flagship.newVisitor(visitorId: "lifecycle-visitor", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        var number = 0
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            number += 1
            do {
                try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "hit-\(number)"))
                say("ack \(number)")
            } catch {
                say("refused \(number): \(error)")
                return
            }
        }
    }
}

var logger = Logger(label: "flagship-service-probe")
logger.logLevel = .info
let config = FSConfigBuilder().DecisionApi()
    .withDecisionBaseURL(decision)
    .withEventsBaseURL(events)
    .withCacheFile(URL(fileURLWithPath: arguments[3]))
    .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 20, batchIntervalTimer: 0.2))
    .withLogger(logger)
    .build()
let flagship = Flagship.sharedInstance
let sdk = FlagshipService(flagship: flagship, envId: "lifecycle_env", apiKey: "lifecycle_key", config: config)
let group = ServiceGroup(configuration: ServiceGroupConfiguration(
    services: [sdk, TrafficService(flagship: flagship, sdk: sdk)],
    gracefulShutdownSignals: [.sigterm],
    logger: logger
))
do {
    try await group.run()
    say("closed")
} catch {
    say("failed: \(error)")
    exit(1)
}
#else
import Foundation

FileHandle.standardError.write(Data("flagship-service-probe is built with the package trait ServiceLifecycle: swift build --traits ServiceLifecycle\n".utf8))
exit(2)
#endif
