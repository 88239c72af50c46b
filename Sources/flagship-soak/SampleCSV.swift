import Foundation

/// The samples as CSV: a header row, then one row per sample. Units are in the column names;
/// an empty cell is a value the run could not measure then (no visitor finished, the store busy).
enum SampleCSV {
    /// Each column's name and how a sample fills it: header and rows cannot disagree.
    private static let columns: [(name: String, value: @Sendable (Sample) -> String)] = [
        ("elapsed_s", { decimal($0.elapsed, 1) }),
        ("offered_visitors_per_s", { decimal($0.offeredRate, 1) }),
        ("achieved_visitors_per_s", { decimal($0.achievedRate, 1) }),
        ("visitors_offered", { String($0.offered) }),
        ("visitors_completed", { String($0.completed) }),
        ("visitors_not_started", { String($0.notStarted) }),
        ("visitors_failed", { String($0.failedVisitors) }),
        ("visitors_in_flight", { String($0.inFlight) }),
        ("hits_accepted", { String($0.accepted) }),
        ("hits_accepted_per_s", { decimal($0.acceptedRate, 1) }),
        ("hits_delivered_sdk", { String($0.deliveredBySDK) }),
        ("hits_delivered_server", { String($0.delivered) }),
        ("hits_delivered_per_s", { decimal($0.deliveredRate, 1) }),
        ("backlog_hits", { String($0.backlog) }),
        ("evicted", { String($0.evicted) }),
        ("shed", { String($0.shed) }),
        ("refused_overloaded", { String($0.refusedOverloaded) }),
        ("lost", { String($0.lost) }),
        ("rejected", { String($0.rejected) }),
        ("failed_requests", { String($0.failedRequests) }),
        ("store_bytes", { String($0.storeBytes) }),
        ("visitor_rows", { $0.visitorRows.map(String.init) ?? "" }),
        ("rss_bytes", { $0.rssBytes.map(String.init) ?? "" }),
        ("rss_anon_bytes", { $0.rssAnonymousBytes.map(String.init) ?? "" }),
        ("sqlite_heap_bytes", { $0.heap.map { String($0.sqliteBytes) } ?? "" }),
        ("malloc_in_use_bytes", { $0.heap?.mallocInUseBytes.map(String.init) ?? "" }),
        ("malloc_free_bytes", { $0.heap?.mallocFreeBytes.map(String.init) ?? "" }),
        ("written_bytes", { $0.io.map { String($0.writtenBytes) } ?? "" }),
        ("storage_write_bytes", { $0.io.map { String($0.storageBytes) } ?? "" }),
        ("fetch_flags_p50_ms", { $0.fetchFlags.map { decimal($0.p50, 3) } ?? "" }),
        ("fetch_flags_p99_ms", { $0.fetchFlags.map { decimal($0.p99, 3) } ?? "" }),
        ("send_hit_p50_ms", { $0.sendHit.map { decimal($0.p50, 3) } ?? "" }),
        ("send_hit_p99_ms", { $0.sendHit.map { decimal($0.p99, 3) } ?? "" }),
    ]

    static var header: String {
        columns.map(\.name).joined(separator: ",")
    }

    static func text(_ samples: [Sample]) -> String {
        ([header] + samples.map { sample in columns.map { $0.value(sample) }.joined(separator: ",") })
            .joined(separator: "\n") + "\n"
    }

    static func write(_ samples: [Sample], to url: URL) throws(SoakError) {
        try SoakOutput.write(Data(text(samples).utf8), to: url)
    }

    private static func decimal(_ value: Double, _ places: Int) -> String {
        String(format: "%.\(places)f", value)
    }
}

enum SoakOutput {
    /// Writes a result file whole (a reader never sees half of it).
    static func write(_ data: Data, to url: URL) throws(SoakError) {
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw SoakError.fileSystem(path: url.path, reason: "cannot write it: \(error.localizedDescription)")
        }
    }
}
