// The program of RunningInAServer.md (Sources/Flagship/Flagship.docc), verbatim: built by `make build`
// (FLAGSHIP_EXAMPLE=1, Package.swift), where swift-service-lifecycle is already compiled, and run
// offline by DocumentationSnippetTests.
import Flagship
import FlagshipLocalServer
import FlagshipServiceLifecycle
import Logging
import ServiceLifecycle

/// Your app: here, one visitor served. A real server serves requests until SIGTERM.
struct Checkout: Service {
    let flags: FlagshipService

    func run() async throws {
        try await flags.started()                   // the SDK is started: visitors can be built
        let visitor = await flags.flagship.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        print("btnColor:", visitor.getFlag(key: "btnColor").value(defaultValue: "blue") ?? "blue")
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "checkout"))
    }
}

let server = LocalFlagshipServer(envId: "env", apiKey: "key")   // stands in for Flagship's hosts
try server.start()
var logger = Logger(label: "shop")
logger.logLevel = .info
let flags = FlagshipService(envId: "env", apiKey: "key", config: FSConfigBuilder().DecisionApi()
    .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
    .withLogger(logger)                             // the SDK's lines go through your logger
    .build())
let group = ServiceGroup(configuration: ServiceGroupConfiguration(
    services: [
        .init(service: flags),
        // Once Checkout returns, the group shuts down gracefully, as SIGTERM would make it.
        .init(service: Checkout(flags: flags), successTerminationBehavior: .gracefullyShutdownGroup),
    ],
    gracefulShutdownSignals: [.sigterm],
    logger: logger))
try await group.run()                               // returns once the SDK is closed
print(server.hits.count, "hit(s) delivered before the process ends")
server.stop()
