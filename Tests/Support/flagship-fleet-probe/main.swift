#if Postgres
import Flagship
import FlagshipPostgres
import Foundation
import Logging

// One instance of a fleet, as a process of its own, for the PostgreSQL fleet tests:
//
//   flagship-fleet-probe decide <postgres URL> <server URL> <cache dir> <visitor id>
//     Bucketing mode: waits for a bucketing file, decides for the visitor, prints
//     `variation <campaign id> <variation id>` for each campaign, and closes.
//   flagship-fleet-probe send <postgres URL> <server URL> <cache dir> <prefix> <count> <lease s>
//     Decision API mode: sends <count> awaited events `<prefix>-<n>`, 8 at a time; prints
//     `ack <prefix>-<n>` once each `try await sendHit` returned (committed), then `sent`; goes on
//     delivering until standard input ends, then closes and prints `closed`.
//   flagship-fleet-probe erase <postgres URL> <server URL> <cache dir> <visitor id>
//     Withdraws the visitor's consent and closes (which waits for the erasure).
//
// The password comes from PGPASSWORD. Output lines are written at once: the test reads them
// while this runs, and may kill it with SIGKILL at any line.

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("flagship-fleet-probe: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 5, let server = URL(string: arguments[2]) else {
    fail("usage: flagship-fleet-probe decide|send|erase <postgres URL> <server URL> <cache dir> <arguments...>")
}
let (command, url, cache) = (arguments[0], arguments[1], URL(fileURLWithPath: arguments[3]))
let lease = command == "send" && arguments.count == 7 ? TimeInterval(arguments[6]) : nil
let logger = Logger(label: "io.flagship.fleet-probe")
let store: FlagshipPostgresStore
do {
    store = FlagshipPostgresStore(try .init(url: url), sharesDatabase: false, logger: logger, callTimeout: .seconds(5),
                                  retryAfter: 1, leaseDuration: lease)
    try await store.prepare()
} catch {
    fail("\(error)")
}

let builder = FSConfigBuilder()
    .withDecisionBaseURL(server.appendingPathComponent("v2"))
    .withEventsBaseURL(server)
    .withCacheDirectory(cache)
    .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 20, batchIntervalTimer: 0.05))
    .withLogLevel(.WARNING)
    .withPostgresStore(store)
let flagship = Flagship.sharedInstance

switch command {
case "decide":
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.Bucketing().withBucketingBaseURL(server).build())
    let visitor = await flagship.newVisitor(visitorId: arguments[4], hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    try await visitor.fetchFlags()
    let assigned = Set(visitor.getFlags().keys().map { key in
        let metadata = visitor.getFlag(key: key).metadata()
        return "variation \(metadata.campaignId) \(metadata.variationId)"
    })
    for line in assigned.sorted() { say(line) }
case "send":
    guard let count = Int(arguments[5]) else { fail("send: <count> is not a number") }
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.build())
    let prefix = arguments[4]
    let visitor = await flagship.newVisitor(visitorId: prefix, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<8 {
            group.addTask {
                for number in stride(from: lane + 1, through: count, by: 8) {
                    let label = "\(prefix)-\(number)"
                    try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: label))
                    say("ack \(label)")
                }
            }
        }
        try await group.waitForAll()
    }
    say("sent")
    // Delivers (its own hits and the fleet's) until the test closes standard input.
    let input = FileHandle.standardInput
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            while !input.availableData.isEmpty {}
            done.resume()
        }
    }
case "erase":
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.build())
    let visitor = await flagship.newVisitor(visitorId: arguments[4], hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    visitor.setConsent(hasConsented: false)
default:
    fail("unknown command \(command)")
}
/// Closes the SDK (its last batch, within its deadline), then the store's client.
func closeAll() async {
    await flagship.close()
    await store.close()
}
await closeAll()
say("closed")
#else
import Foundation

FileHandle.standardError.write(Data("flagship-fleet-probe is built with the package trait Postgres: swift build --traits Postgres\n".utf8))
exit(2)
#endif
