import ArgumentParser
import FlagshipLocalServer
import FlagshipStore
import Foundation

/// `flagship serve`: a Flagship-compatible backend on 127.0.0.1, in the foreground, to point an
/// app or the SDK at while working offline.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a local Flagship backend on 127.0.0.1 until interrupted.",
        discussion: """
            Answers the Decision API (POST /v2/<env-id>/campaigns), activates (POST /v2/activate), \
            hit batches (POST /) and telemetry. As the platform, the Decision API needs the x-api-key, \
            activates refuse a wrong one but take none (the official Python SDK sends none), hit \
            batches need none. --record appends each request, its body byte for byte, to a file only \
            its owner can read (created 0600). With a bucketing \
            file (--bucketing-file or --sample-bucketing) it also serves that file (GET \
            /<env-id>/bucketing.json, with Last-Modified and 304 answers to If-Modified-Since), and the \
            Decision API answers with the SDK's bucketing engine on it, so both modes get the same \
            flags. Prints one line per request. Stops cleanly on SIGINT (Ctrl-C) or SIGTERM; a second \
            one ends it at once.
            """
    )

    @Option(help: "The environment id the SDK is started with.") var envId: String
    @OptionGroup(title: "API key (the one the SDK is started with)") var key: APIKeyArguments
    @Option(help: "The port on 127.0.0.1 (0: any free port).") var port: UInt16 = 0
    @Option(help: ArgumentHelp("A decision JSON file to answer with (default: a built-in sample).", valueName: "file"))
    var decisionFile: String?
    @Option(help: ArgumentHelp("A bucketing file to serve and decide with (instead of a decision file).", valueName: "file"))
    var bucketingFile: String?
    @Flag(help: "Serve and decide with the built-in sample bucketing file (three campaigns).")
    var sampleBucketing = false
    @Option(help: ArgumentHelp("Append every request to this file, one JSON object per line.", valueName: "file"))
    var record: String?

    func validate() throws {
        if bucketingFile != nil && sampleBucketing {
            throw ValidationError("give one of --bucketing-file and --sample-bucketing")
        }
        if decisionFile != nil && (bucketingFile != nil || sampleBucketing) {
            throw ValidationError("--decision-file cannot go with a bucketing file: the bucketing file decides")
        }
    }

    func run() async throws {
        let apiKey = try key.key()
        let decision: DecisionSource
        let served: ServedBucketingFile?
        do {
            served = try bucketingFile.map { try ServedBucketingFile.contents(atPath: $0) }
                ?? (sampleBucketing ? ServedBucketingFile.sample() : nil)
            decision = try served != nil ? .bucketing : decisionFile.map(DecisionSource.file(atPath:)) ?? .sample
        } catch let error as LocalServerError {
            throw CommandFailure(error.description)
        }
        for warning in served?.warnings ?? [] { Output.warn("\(bucketingFile ?? "sample bucketing file"): \(warning)") }
        let server = LocalFlagshipServer(LocalFlagshipServer.Configuration(
            envId: envId,
            apiKey: apiKey,
            port: port,
            decision: decision,
            bucketingFile: served,
            recordFile: record.map { URL(fileURLWithPath: $0) },
            onRequest: { Output.line(ServeCommand.line(for: $0)) }
        ))
        do {
            try server.start()
        } catch let error as LocalServerError {
            throw CommandFailure(error.description)
        }
        // A new record file is created 0600; one that was already there keeps its mode.
        if let record, let mode = FilePermissions.openToOthers(atPath: record) {
            Output.warn("other users can read or change the record file \(record) (mode \(FilePermissions.octal(mode))), which will hold what visitors send: chmod 600 it")
        }
        let source = served.map { "bucketing file \(bucketingFile ?? "built-in sample"), \($0.campaignCount) campaign(s)" }
            ?? decisionFile ?? "built-in sample"
        let bucketingOption = served == nil ? "" : " --bucketing-url \(server.bucketingBaseURL.absoluteString)"
        // Caught before the ready line: whoever reads it may send SIGTERM at once.
        let termination = TerminationSignals()
        Output.line("""
            Flagship local server on \(server.baseURL.absoluteString) (env \(envId), \
            decision: \(source)\(record.map { ", recording to \($0)" } ?? ""))
            SDK options: --decision-url \(server.decisionBaseURL.absoluteString) --events-url \(server.eventsBaseURL.absoluteString)\(bucketingOption)
            Ctrl-C to stop.
            """)
        let signal = await termination.first()
        server.stop()
        Output.line("stopped (\(signal))")
    }

    /// `POST /v2/activate → 204`, `GET /env/bucketing.json → 304`, with the faults that applied.
    private static func line(for record: RecordedRequest) -> String {
        let request = record.request
        let answer = record.status.map(String.init) ?? "dropped"
        let faults = record.faults.isEmpty ? "" : " (fault: \(record.faults.map(\.description).joined(separator: ", ")))"
        return "\(request.method) \(request.path) → \(answer)\(faults)"
    }
}

/// The write end of the pipe `TerminationSignals`' handler writes a signal's number to. Set once,
/// before the handler is installed, and only read after (by the handler, on whichever thread the
/// signal lands).
nonisolated(unsafe) private var terminationPipeWriteEnd: Int32 = -1

/// SIGINT and SIGTERM, caught from creation on (their default action, exit at once, turned off),
/// so the server is stopped and the record file complete: `first()` names the first that came,
/// waiting for it if none has.
///
/// A `sigaction` handler writes the signal's number to a pipe, which a thread of its own reads. A
/// dispatch signal source would not do: on Linux libdispatch installs its handler later, on its
/// manager thread, and a SIGTERM sent between `resume()` and then (by whoever reads the ready line
/// at once) met SIG_IGN and was lost. Once a signal has come, a second SIGINT or SIGTERM has its
/// default action again: a Ctrl-C on a stop that hangs ends the process.
private final class TerminationSignals: Sendable {
    private let readEnd: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            preconditionFailure("flagship serve: pipe failed (errno \(errno)), so SIGINT and SIGTERM cannot be caught")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        readEnd = ends[0]
        terminationPipeWriteEnd = ends[1]
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                let saved = errno
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(terminationPipeWriteEnd, &byte, 1)
                errno = saved
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
    }

    /// The first of SIGINT and SIGTERM to come, read off the pipe on a thread of its own (never
    /// one of the cooperative pool's).
    func first() async -> String {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [readEnd] in
                var byte: UInt8 = 0
                // The write end is never closed, so nothing but a signal ends this read.
                while read(readEnd, &byte, 1) < 0 && errno == EINTR {}
                signal(SIGINT, SIG_DFL)
                signal(SIGTERM, SIG_DFL)
                continuation.resume(returning: Int32(byte) == SIGINT ? "SIGINT" : "SIGTERM")
            }
        }
    }
}
