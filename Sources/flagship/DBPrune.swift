import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship db prune`: the SDK's visitor retention, run by hand on a store file.
struct DBPrune: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete the visitors not seen for the retention period, with their decisions.",
        discussion: """
            What the SDK's background task does every hour: visitors not looked up or fetched for \
            --retention seconds (30 days by default) are deleted with their recorded decisions, the \
            least recently seen first, 500 per transaction; with --max-visitors, the least recently \
            seen beyond it too. The freed pages are then given back to the file system.

            A file made before incremental auto-vacuum (and too large for the SDK to switch at \
            open) is switched first, by a VACUUM that rewrites it whole: stop the processes using \
            it for large files. --dry-run opens the file read-only and changes nothing.
            """
    )

    @OptionGroup var database: DatabaseArguments<PruneStore>

    @Option(help: ArgumentHelp("Delete the visitors not seen for this many seconds (0: none).", valueName: "seconds"))
    var retention: Int = Int(FlagshipConfig.defaultVisitorRetention)

    @Option(help: ArgumentHelp("Keep this many visitors at most, the least recently seen deleted first.", valueName: "count"))
    var maxVisitors: Int?

    @Flag(help: "Count what would be deleted, and change nothing.")
    var dryRun = false

    func validate() throws {
        try VisitorRetentionArgument.validate(retention)
        if let maxVisitors, maxVisitors < 0 { throw ValidationError("--max-visitors must be 0 or more") }
    }

    func run() async throws {
        try database.requireStoreFile()
        let now = Date()
        let retention = try VisitorRetentionArgument(seconds: TimeInterval(retention), now: now)
        if dryRun {
            try countDue(retention)
            return
        }
        let store = try FlagshipDatabase.open(at: database.url)
        defer { store.close() }
        DBMigrate.report(store.opening, of: database.url)
        if let reason = store.opening.readOnly {
            throw CommandFailure("\(database.url.path) cannot be pruned now: \(reason)")
        }
        do {
            if try FlagshipDatabase.switchToIncrementalVacuum(store.database) || store.opening.switchedToIncrementalVacuum {
                Output.line("switched \(database.url.path) to incremental auto-vacuum: the file was rewritten once")
            }
        } catch {
            Output.warn("\(database.url.path) could not be switched to incremental auto-vacuum (\(error)): the pages a prune frees are reused by later rows, not given back")
        }
        let sizeBefore = fileSize()
        let started = ContinuousClock.now
        let prune = try await store.pruneVisitors(notSeenSince: retention.boundary, keepingAtMost: maxVisitors)
        let took = ContinuousClock.now - started
        // Closed (the last connection checkpoints the WAL): the pages given back leave the file now.
        store.close()
        let milliseconds = Int(took.inMilliseconds)
        Output.line("deleted \(Self.describe(expired: prune.expired, evicted: prune.evicted, retention: retention, maxVisitors: maxVisitors))"
                    + ", with \(prune.decisionRows) decision row(s), in \(prune.transactions) transaction(s), \(milliseconds) ms"
                    + (prune.transactions > 0 ? "; the longest held the write lock \(prune.longestHoldText)" : "") + prune.restsForAReaderText)
        if prune.pagesToReadAhead > 0 {
            Output.line("read ahead \(prune.pagesReadAhead) of the \(prune.pagesToReadAhead) leaf page(s) of the indexes keyed by visitor id, "
                        + "beside the batches: the visitors due were as many as their leaves")
        }
        let sizeAfter = fileSize()
        if prune.pagesReturned > 0, sizeAfter >= sizeBefore {
            // Another connection (another process's read) kept the last checkpoint from
            // finishing: the pages left the file's free list, not yet the file.
            Output.line("freed \(prune.pagesReturned) page(s) inside the file, which keeps its size for now (\(sizeAfter) bytes): "
                        + "another process has it open, and the file shrinks at the first checkpoint that finishes (its last connection's close at the latest)")
        } else {
            Output.line("gave back \(prune.pagesReturned) page(s): the file is \(sizeAfter) bytes (was \(sizeBefore))")
        }
    }

    /// `--dry-run`: what a prune would delete, read from the file as it is (any schema version).
    private func countDue(_ retention: VisitorRetentionArgument) throws {
        let store = try database.openForInspection()
        defer { store.close() }
        let (total, expired) = try store.read { db in
            (try db.visitors.count(), try retention.boundary.map { try db.visitors.countNotSeen(since: $0) } ?? 0)
        }
        let evicted = maxVisitors.map { max(0, total - expired - $0) } ?? 0
        Output.line("would delete \(Self.describe(expired: expired, evicted: evicted, retention: retention, maxVisitors: maxVisitors))"
                    + " of \(total); nothing was changed (--dry-run)")
    }

    /// `3 visitor(s) not seen for 30d00h and 2 beyond --max-visitors 10`.
    private static func describe(expired: Int, evicted: Int, retention: VisitorRetentionArgument, maxVisitors: Int?) -> String {
        var parts: [String] = []
        if let text = retention.text { parts.append("\(expired) visitor(s) not seen for \(text)") }
        if let maxVisitors { parts.append("\(evicted) visitor(s) beyond --max-visitors \(maxVisitors)") }
        return parts.isEmpty ? "no visitor (--retention 0 and no --max-visitors)" : parts.joined(separator: " and ")
    }

    private func fileSize() -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: database.url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// `--retention SECONDS` of `db prune` and `db inspect`: 0 means no retention.
struct VisitorRetentionArgument {
    /// `nil`: visitors are kept whatever their age.
    let seconds: TimeInterval?
    /// Unix ms: visitors last seen before it are due; `nil` without a retention.
    let boundary: Int64?

    /// Refuses a negative `--retention`, in `validate()`: a usage error.
    static func validate(_ seconds: Int) throws {
        guard seconds >= 0 else { throw ValidationError("--retention must be a number of seconds, 0 or more") }
    }

    init(seconds: TimeInterval, now: Date) throws {
        guard seconds.isFinite, seconds >= 0 else { throw ValidationError("--retention must be a number of seconds, 0 or more") }
        self.seconds = seconds > 0 ? seconds : nil
        boundary = self.seconds.map { now.addingTimeInterval(-$0).unixMilliseconds }
    }

    /// `30d00h`, as ages are printed; `nil` without a retention.
    var text: String? {
        seconds.map { Output.age(seconds: Int64($0)) }
    }
}
