import ArgumentParser
import Flagship
import Foundation

/// `flagship fetch`: runs the SDK for one visitor and prints what it gives, as one JSON object.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch one visitor's flags through the SDK and print them as JSON.",
        discussion: """
            The local store answers first: a visitor cached by an earlier run has its flags before \
            any network call (fetchReason FETCHED_FROM_CACHE with --offline), and keeps them when the \
            fetch fails (FETCH_ERROR). In bucketing mode the stored bucketing file decides at once \
            (online, a newer one is downloaded in the background and stored for the next run); \
            with none stored, the fetch waits for the first download, and --bootstrap FILE decides \
            meanwhile (reason STATIC). With --offline nothing leaves the process, not even the \
            consent hit: it waits in the store for the next online run. Offline in bucketing mode \
            the stored bucketing file, else the --bootstrap file, decides, as online; with neither, \
            the fetch fails at once ("error"). Offline in api mode nothing decides: a cached \
            visitor keeps its stored flags (FETCHED_FROM_CACHE).
            """
    )

    @OptionGroup var sdk: SDKArguments<FetchStore>
    @Option(help: "The visitor id.") var visitorId: String
    @Option(help: ArgumentHelp("The visitor context, a JSON object of strings, numbers and booleans.", valueName: "json"))
    var context: String?
    @Option(help: ArgumentHelp("Milliseconds the Decision API may take.", valueName: "ms")) var timeout: Int = 2000
    @Flag(help: ArgumentHelp("Nothing leaves the process: the local store alone gives the flags (in bucketing mode, its bucketing "
                             + "file or --bootstrap decides); the consent hit waits in the store."))
    var offline = false
    @Flag(help: "Create the visitor without consent.") var noConsent = false
    @Flag(help: ArgumentHelp("Report the exposure of every flag, as a page that shows them all (an activate per variation the "
                             + "platform was not told of within the exposure window)."))
    var expose = false
    @Option(help: ArgumentHelp("How flags are decided: api (the Decision API) or bucketing (the bucketing file, on this machine).",
                               valueName: "api|bucketing"))
    var mode: Mode = .api
    @Option(help: ArgumentHelp("The bucketing file's base URL (bucketing mode): the file is <url>/<envId>/bucketing.json.",
                               valueName: "url"))
    var bucketingURL: String?
    @Option(help: ArgumentHelp("Bucketing mode: a bucketing file to decide from while the store has none and none is downloaded yet.",
                               valueName: "file"))
    var bootstrap: String?
    @OptionGroup var maximumBytes: BucketingFileLimit

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case api, bucketing
    }

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of milliseconds") }
        if let bucketingURL {
            guard URL(string: bucketingURL)?.scheme != nil else {
                throw ValidationError("--bucketing-url must be an absolute URL, not '\(bucketingURL)'")
            }
            guard mode == .bucketing else { throw ValidationError("--bucketing-url needs --mode bucketing") }
        }
        if bootstrap != nil, mode != .bucketing { throw ValidationError("--bootstrap needs --mode bucketing") }
        // Here, not in run(): a usage error is said with this command's usage.
        _ = try parseContext()
    }

    private func config(bootstrap: Data?) -> FlagshipConfig {
        let builder = sdk.configBuilder().withTimeout(TimeInterval(timeout))
        if offline { builder.withNetworkDisabled() }
        if mode == .bucketing {
            builder.Bucketing()
            if let bucketingURL, let url = URL(string: bucketingURL) { builder.withBucketingBaseURL(url) }
            if let bootstrap { builder.withBootstrap(bucketingFile: bootstrap) }
            if let limit = maximumBytes.bytes { builder.withBucketingFileMaximumBytes(limit) }
        }
        return builder.build()
    }

    func run() async throws {
        try sdk.requireStoreFile()
        // Read here, once (a FIFO or `<(curl …)` can be read only once), so that a file that is
        // not there or not usable is an error, not a log line.
        let bootstrapBytes = try bootstrap.map { try BucketingFileArgument.bytes($0, maximumBytes: maximumBytes.bytes) }
        let visitorContext = try parseContext()
        let flagship = try sdk.startSDK(config(bootstrap: bootstrapBytes))
        let visitor = await flagship.newVisitor(visitorId: visitorId, hasConsented: !noConsent, instanceType: .NEW_INSTANCE)
            .withContext(context: visitorContext)
            .buildAsync()
        var fetchError: String?
        // Offline in bucketing mode the file on this machine decides, as online; in api mode
        // nothing could, and the visitor keeps what the store gave it.
        if !offline || mode == .bucketing {
            do {
                try await visitor.fetchFlags()
            } catch {
                fetchError = String(describing: error)
            }
        }
        if expose { _ = visitor.flagsSnapshot(exposure: .now) }
        var output: [String: Any] = [
            "visitorId": visitor.visitorId,
            "fetchStatus": visitor.fetchStatus.rawValue,
            "fetchReason": visitor.requiredFetchReason.rawValue,
            "sdkStatus": flagship.getStatus().rawValue,
            "flags": Self.describe(visitor.getFlags()),
        ]
        if let fetchError { output["error"] = fetchError }
        await flagship.close()
        try Output.printJSON(output)
    }

    private func parseContext() throws -> [String: Any] {
        guard let context else { return [:] }
        return ContextArgument.anyValues(try ContextArgument.parse(context))
    }

    /// Each flag's value (read without exposure), why it is that value, and its campaign.
    private static func describe(_ flags: FSFlagCollection) -> [String: Any] {
        var described: [String: Any] = [:]
        for (key, flag) in flags {
            let details = flag.details(defaultValue: nil as Any?, visitorExposed: false)
            let metadata = details.metadata
            var entry: [String: Any] = [
                "value": details.value ?? NSNull(),
                "reason": details.reason.rawValue,
                "campaignId": metadata.campaignId,
                "variationGroupId": metadata.variationGroupId,
                "variationId": metadata.variationId,
                "variationName": metadata.variationName,
                "isReference": metadata.isReference,
                "campaignType": metadata.campaignType,
                "slug": metadata.slug,
            ]
            if let code = details.errorCode { entry["errorCode"] = code.rawValue }
            described[key] = entry
        }
        return described
    }
}
