import Configuration
import Flagship
import FlagshipConfiguration
import FlagshipMetrics
import FlagshipServiceLifecycle
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

// Every setting from the environment: PORT, and the SDK's FLAGSHIP_* (FlagshipConfiguration).
let reader = ConfigReader(provider: EnvironmentVariablesProvider())
var logger = Logger(label: "hummingbird-server")
logger.logLevel = .info

// Metrics: the SDK's, Hummingbird's and the app's, in one Prometheus registry.
let registry = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

let settings: FlagshipSettings
do {
    settings = try FlagshipSettings(reading: reader)
} catch {
    logger.critical("\(error)")
    exit(78)  // EX_CONFIG
}
let flags = FlagshipService(envId: settings.envId, apiKey: settings.apiKey, config: settings.configBuilder()
    .withLogger(logger)
    .withInstrumentation(FlagshipMetrics())
    .build())

let router = Router()
router.middlewares.add(MetricsMiddleware())

/// `GET /flags/{visitorId}?key=value…`: the visitor's flags, decided with the query parameters as
/// its context, as JSON, with `initialFlagsData` for Flagship's JavaScript or React SDK on the page;
/// an event hit (`flags_served`) says they were served. A returning visitor whose context did not
/// change sends only that event: its consent, context and exposures are reported once.
router.get("flags/:visitorId") { request, context -> Response in
    let visitorId = try context.parameters.require("visitorId")
    try await flags.started()   // the group starts its services at once: a request may come first
    var visitorContext: [String: Any] = [:]
    for (key, value) in request.uri.queryParameters {
        let text = String(value)
        // Numbers and booleans as such, so that targeting rules on them match.
        visitorContext[String(key)] = Int(text) ?? Double(text).map { $0 as Any } ?? Bool(text).map { $0 as Any } ?? text
    }
    // One call: built from the store first, fetched; a failed fetch leaves the stored flags.
    let visitor = await flags.flagship.fetchedVisitor(visitorId: visitorId, hasConsented: true, context: visitorContext)
    // Every flag at once; the page shows them all, so their exposure is reported now.
    let page = visitor.flagsSnapshot(exposure: .now)
    var answer: [String: Any] = ["visitorId": visitorId, "fetchStatus": page.fetchStatus.rawValue]
    var served: [String: Any] = [:]
    for flag in page.flags {
        served[flag.key] = flag.rawValue.foundationValue ?? NSNull()
    }
    answer["flags"] = served
    answer["initialFlagsData"] = try JSONSerialization.jsonObject(with: page.initialFlagsData())
    visitor.sendHitInBackground(FSEvent(eventCategory: .Action_Tracking, eventAction: "flags_served"))
    let body = try JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])
    return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
}

/// `GET /health/ready`: 200 while the SDK keeps up with its hits, 503 when it is stopped or
/// overloaded (backpressure: hits arrive faster than they are delivered), with why, for a load
/// balancer's readiness probe. No I/O: `health` is read from memory.
router.get("health/ready") { _, _ -> Response in
    let health = flags.flagship.health
    let body = try JSONSerialization.data(withJSONObject: [
        "status": health.status.rawValue, "backlog": health.backlog, "backlogLimit": health.backlogLimit, "shed": health.shed,
    ], options: [.sortedKeys])
    return Response(status: health.isReady ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
}

/// `GET /metrics`: the Prometheus text format.
router.get("metrics") { _, _ -> Response in
    var buffer: [UInt8] = []
    registry.emit(into: &buffer)
    return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: buffer)))
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: reader.int(forKey: "port", default: 8080))),
    services: [],
    logger: logger
)

// The SDK first: the group stops its services in the reverse order, so on SIGTERM the HTTP
// server drains its requests, then the SDK closes (a last flush within its 5 s deadline).
let group = ServiceGroup(configuration: ServiceGroupConfiguration(
    services: [flags, app],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger
))
try await group.run()
