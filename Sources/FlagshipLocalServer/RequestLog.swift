#if canImport(Glibc)
import Flagship
import FlagshipStore
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The requests the server received, in arrival order: kept in memory for tests (all of them, or
/// the newest `recordLimit`), counted in running totals, appended to a JSON Lines file when one is
/// configured, and announced to whoever waits for them.
final class RequestLog: Sendable {
    private struct Waiter {
        /// Resumes the waiting task if `records` satisfy it; says whether it did.
        let resolve: @Sendable ([RecordedRequest]) -> Bool
        let fail: @Sendable (any Error) -> Void
        var timer: Task<Void, Never>?
    }

    private struct State {
        /// In sequence order; with a limit, up to twice as many as it keeps (see `append`).
        var records: [RecordedRequest] = []
        var totals = ReceivedTotals()
        var waiters: [Int: Waiter] = [:]
        var lastWaiterID = 0
    }

    private let state = Locked(State())
    private let recordFileURL: URL?
    private let recordFile = Locked<FileHandle?>(nil)
    /// How many of the newest records are kept; `nil`: all.
    private let recordLimit: Int?

    init(recordFile: URL?, recordLimit: Int? = nil) {
        recordFileURL = recordFile
        self.recordLimit = recordLimit.map { max(0, $0) }
    }

    /// Opens the record file for appending, creating it if needed; once is enough. A new file is
    /// made readable and writable by its owner alone (0600), whatever the umask: it holds what
    /// visitors sent. An existing file keeps the mode it has.
    func openRecordFile() throws {
        guard let url = recordFileURL else { return }
        try recordFile.withLock { handle in
            guard handle == nil else { return }
            let descriptor = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                let reason = errno == ENOENT ? "cannot create it" : String(cString: strerror(errno))
                throw LocalServerError.recordFile(path: url.path, reason: reason)
            }
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        }
    }

    var records: [RecordedRequest] {
        state.withLock { kept($0.records) }
    }

    var totals: ReceivedTotals {
        state.withLock { $0.totals }
    }

    /// Forgets the records; the totals still count them.
    func removeAll() {
        state.withLock { $0.records.removeAll() }
    }

    /// The newest `recordLimit` of `records`.
    private func kept(_ records: [RecordedRequest]) -> [RecordedRequest] {
        guard let recordLimit, records.count > recordLimit else { return records }
        return Array(records.suffix(recordLimit))
    }

    func append(_ record: RecordedRequest) {
        let timers = state.withLock { state -> [Task<Void, Never>] in
            // Requests are numbered on arrival but may finish out of order (a slow handler).
            let index = state.records.lastIndex { $0.sequence < record.sequence }.map { $0 + 1 } ?? 0
            state.records.insert(record, at: index)
            state.totals.count(record)
            // Trimmed once the array holds `limit` records more than it keeps: one move of the
            // kept records per `limit` appends, where trimming at each append would move them all
            // every time.
            if let recordLimit, state.records.count > recordLimit + max(recordLimit, 1) {
                state.records.removeFirst(state.records.count - recordLimit)
            }
            guard !state.waiters.isEmpty else { return [] }
            let records = kept(state.records)
            var resolved: [Task<Void, Never>] = []
            for (id, waiter) in state.waiters where waiter.resolve(records) {
                state.waiters[id] = nil
                if let timer = waiter.timer { resolved.append(timer) }
            }
            return resolved
        }
        for timer in timers { timer.cancel() }
        guard recordFileURL != nil else { return }
        var line = RequestLog.jsonLine(record)
        line.append(UInt8(ascii: "\n"))
        // Best effort: a full disk must not take the server down with it.
        recordFile.withLock { handle in try? handle?.write(contentsOf: line) }
    }

    /// Waits until `extract` finds what it wants in the records, or `timeout` passes.
    func wait<Value: Sendable>(
        timeout: Duration,
        timedOut: @escaping @Sendable ([RecordedRequest]) -> LocalServerError,
        extract: @escaping @Sendable ([RecordedRequest]) -> Value?
    ) async throws -> Value {
        let id = state.withLock { state -> Int in
            state.lastWaiterID += 1
            return state.lastWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let waiting = state.withLock { state -> Bool in
                    if let value = extract(self.kept(state.records)) {
                        continuation.resume(returning: value)
                        return false
                    }
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                        return false
                    }
                    state.waiters[id] = Waiter(
                        resolve: { records in
                            guard let value = extract(records) else { return false }
                            continuation.resume(returning: value)
                            return true
                        },
                        fail: { continuation.resume(throwing: $0) }
                    )
                    return true
                }
                guard waiting else { return }
                let timer = Task {
                    try? await Task.sleep(for: timeout)
                    guard !Task.isCancelled else { return }
                    self.fail(id) { timedOut($0) }
                }
                let stillWaiting = state.withLock { state -> Bool in
                    state.waiters[id]?.timer = timer
                    return state.waiters[id] != nil
                }
                if !stillWaiting { timer.cancel() }
            }
        } onCancel: {
            fail(id) { _ in CancellationError() }
        }
    }

    /// Ends waiter `id`, if it still waits, with the error `error` makes of the records.
    private func fail(_ id: Int, _ error: @Sendable ([RecordedRequest]) -> any Error) {
        let ended = state.withLock { state -> (Waiter, any Error)? in
            guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
            return (waiter, error(kept(state.records)))
        }
        guard let (waiter, error) = ended else { return }
        waiter.timer?.cancel()
        waiter.fail(error)
    }

    /// One request as one line of JSON. The API key is masked: a record file is shared and
    /// kept, and the key is a secret; the status says whether it was right. The body is kept
    /// exactly: `bodyText` (UTF-8) or `bodyBase64` (anything else).
    static func jsonLine(_ record: RecordedRequest) -> Data {
        let request = record.request
        var headers: [String: FSJSONValue] = [:]
        for (name, value) in request.headers.fields {
            let lowercased = name.lowercased()
            headers[lowercased] = .string(lowercased == "x-api-key" ? "<redacted>" : value)
        }
        var query: [String: FSJSONValue] = [:]
        for (name, value) in request.query {
            query[name] = .array((query[name]?.arrayValue ?? []) + [.string(value)])
        }
        var line: [String: FSJSONValue] = [
            "sequence": .int(Int64(record.sequence)),
            "receivedAt": .string(request.receivedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
            "route": .string(request.route.rawValue),
            "method": .string(request.method),
            "path": .string(request.path),
            "query": .object(query),
            "headers": .object(headers),
            "status": record.status.map { .int(Int64($0)) } ?? .null,
            "outcome": .string(RequestLog.name(of: record.outcome)),
            "faults": .array(record.faults.map { .string($0.description) }),
        ]
        // The body byte for byte: as text when it is UTF-8 (a JSON string holds any), else in
        // base64. `body`, the JSON parsed, is for reading only: it loses spacing, key order,
        // duplicate keys and the spelling of numbers.
        if let text = String(validating: request.body, as: UTF8.self) {
            line["bodyText"] = .string(text)
        } else {
            line["bodyBase64"] = .string(request.body.base64EncodedString())
        }
        if let json = request.json { line["body"] = json }
        return FSJSONValue.object(line).jsonData()
    }

    private static func name(of outcome: RequestOutcome) -> String {
        switch outcome {
        case .answered: return "answered"
        case .cutOff: return "cutOff"
        case .dropped: return "dropped"
        }
    }
}
