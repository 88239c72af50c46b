import ArgumentParser
import Flagship
import Foundation

/// `flagship replay`: sends the hits earlier runs left in the store, as the SDK does at each
/// start, and says how many went.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Send the hits waiting in the store, oldest first, then stop.",
        discussion: """
            Starts the SDK, which deletes the hits past their lifetime (4 h) and sends the others; \
            waits until none is being sent or due (a failed send backs off and is tried once more at \
            close), and prints {"replayed": n, "expired": n, "remaining": n}. The hits the server did \
            not take stay for the next start. Several processes may replay one store at once: each \
            hit is claimed by one of them before it is sent, and "remaining" counts what the store \
            held when this one closed, hits another process was sending included. Hits claimed by \
            a process of this host that died are released at start; a claim of another host's \
            process lapses a minute after it was made (`flagship hits` shows claims).
            """
    )

    @OptionGroup var sdk: SDKArguments

    func run() async throws {
        guard FileManager.default.fileExists(atPath: sdk.storeFile.path) else {
            throw CommandFailure("no store at \(sdk.storeFile.path): nothing to replay")
        }
        try sdk.checkStoreIsUsable()
        let flagship = try sdk.startSDK(sdk.configBuilder().build())
        await flagship.waitUntilTrackingIsIdle()
        guard let statistics = await flagship.closeReporting() else {
            throw CommandFailure("the SDK was closed before the replay was counted")
        }
        if statistics.rejected > 0 {
            Output.warn("the server refused \(statistics.rejected) hit(s) for good: they were dropped")
        }
        if statistics.waiting > 0 {
            Output.warn("\(statistics.waiting) hit(s) remain in \(sdk.storeFile.path): the next start (or replay) sends them")
        }
        try Output.printJSONLine([
            "replayed": statistics.delivered,
            "expired": statistics.expired,
            "remaining": statistics.waiting,
        ])
    }
}
