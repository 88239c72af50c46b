import FlagshipStore
import Foundation
import Logging

/// Told of every change of a visitor's (fetch status, reason), off the caller's thread.
public typealias OnFetchFlagsStatusChanged = @Sendable (_ newStatus: FSFetchStatus, _ reason: FSFetchReasons) -> Void

/// A visitor: its context, its flags and its hits.
///
/// Safe to use from any thread or task. Flag reads are served from memory and never wait for
/// the disk or the network; everything that does runs on the SDK's own queues and tasks.
public final class FSVisitor: Sendable {
    let runtime: SDKRuntime?
    private let onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?
    // Held only to read or write the state: never across I/O or a callback.
    private let state: Locked<VisitorState>
    /// The listeners of `flagChanges()`.
    let flagWatchers = ChangeBroadcaster<[FSFlagValueChange]>()
    /// The configuration's evaluation hooks and the visitor's; `nil` when there are none.
    let hooks: HookChain?

    init(state: VisitorState, runtime: SDKRuntime?, onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?, hooks: HookChain? = nil) {
        self.state = Locked(state)
        self.runtime = runtime
        self.onFetchFlagsStatusChanged = onFetchFlagsStatusChanged
        self.hooks = hooks
    }

    func withState<T>(_ body: (inout VisitorState) -> T) -> T {
        state.withLock(body)
    }

    var logger: Logger { runtime?.logger ?? Flagship.fallbackLogger }

    /// The longest visitor id (and anonymous id) the SDK keeps, in UTF-8 bytes: 1,024. The hit and
    /// visitor stores index the id (PostgreSQL refuses an index entry past about 2,700 bytes, which
    /// failed a fleet's whole group commit). A visitor with a longer id still fetches and reads its
    /// flags; its hits are refused (`FlagshipError.invalidHit`, naming `vid` or `cuid`), its
    /// exposures and consent hits are not sent, and it is not cached, each said in the log.
    public static let maximumIdBytes = 1_024

    // MARK: Identity and status

    /// The visitor's id: the one it was built with, or the one given to `authenticate`.
    public var visitorId: String { withState { $0.visitorId } }
    /// The id the visitor had before `authenticate`, while it is authenticated.
    public var anonymousId: String? { withState { $0.anonymousId } }
    /// Whether the visitor consented to tracking (`setConsent(hasConsented:)` changes it).
    public var hasConsented: Bool { withState { $0.hasConsented } }
    /// Where the visitor's flags stand.
    public var fetchStatus: FSFetchStatus { withState { $0.fetchStatus } }
    /// Why the visitor's flags need a fetch; `NONE` when they do not.
    public var requiredFetchReason: FSFetchReasons { withState { $0.fetchReason } }

    /// The SDK status that governs this visitor: not initialized without a runtime.
    var sdkStatus: FSSdkStatus { runtime?.status ?? .SDK_NOT_INITIALIZED }

    func setFetch(_ status: FSFetchStatus, _ reason: FSFetchReasons, ifGeneration generation: Int? = nil) {
        let changed = withState { state -> Bool in
            if let generation, generation != state.fetchGeneration { return false }
            return state.setFetch(status, reason)
        }
        if changed { notifyFetchStatus(status, reason) }
    }

    /// Applies `change`; when it changed anything, the visitor needs a fetch, for `reason`.
    func requireFetch(_ reason: FSFetchReasons, after change: (inout VisitorState) -> Bool) {
        let changed = withState { state in change(&state) && state.setFetch(.FETCH_REQUIRED, reason) }
        if changed { notifyFetchStatus(.FETCH_REQUIRED, reason) }
    }

    func notifyFetchStatus(_ status: FSFetchStatus, _ reason: FSFetchReasons) {
        guard let callback = onFetchFlagsStatusChanged else { return }
        callbackQueue.async { callback(status, reason) }
    }

    private var callbackQueue: DispatchQueue { Flagship.callbacks }

    // MARK: Fetching

    /// Fetches the visitor's flags; `onFetchCompleted` runs once, whatever the outcome, off the
    /// caller's thread. See `fetchFlags() async throws` for what happens.
    ///
    /// Failures are logged as `fetchFlags() async throws` logs them (this form has no error to give).
    public func fetchFlags(onFetchCompleted: @escaping @Sendable () -> Void) {
        let queue = callbackQueue
        Task {
            do {
                try await fetchFlags()
            } catch let error as FlagshipError where error.code == .fetchFailed {
                // Logged by the fetch itself.
            } catch {
                logger.error("fetchFlags ignored: \(error)")
            }
            queue.async(execute: onFetchCompleted)
        }
    }

    /// Sent with every decision request, beside the visitor's own context.
    static let clientContext: [String: FSJSONValue] = [
        "fs_client": .string(SDKInfo.clientName), "fs_version": .string(SDKInfo.version),
    ]

    // MARK: Flags

    /// The flag of that key; one that does not exist gives its default and reports `NOT_FOUND`.
    public func getFlag(key: String) -> FSFlag {
        FSFlag(key: key, visitor: self)
    }

    /// Every flag the visitor has.
    public func getFlags() -> FSFlagCollection {
        let keys = withState { Array($0.flags.keys) }
        return FSFlagCollection(flags: Dictionary(uniqueKeysWithValues: keys.map { ($0, FSFlag(key: $0, visitor: self)) }), visitor: self)
    }

    /// The flag's entry and the status to report, read together.
    func flagSnapshot(_ key: String) -> (entry: FlagEntry?, status: FSFlagStatus) {
        let sdkStatus = sdkStatus
        return withState { state in
            guard let entry = state.flags[key] else { return (nil, .NOT_FOUND) }
            if sdkStatus == .SDK_PANIC || state.fetchStatus == .PANIC { return (entry, .PANIC) }
            return (entry, state.fetchStatus == .FETCHED ? .FETCHED : .FETCH_REQUIRED)
        }
    }

    /// `FSFlag.value(defaultValue:visitorExposed:)`: the entry and whether its exposure is still
    /// to report, in one pass under the lock (not generic, so nothing is boxed there). Once the
    /// exposure is reported, a read takes no other lock and allocates nothing.
    func readFlag<T>(_ key: String, defaultValue: T?, exposing: Bool) -> T? {
        // With hooks, the details' read: the same value and exposure, and what the hooks are told.
        if hooks != nil { return readFlagDetails(key, defaultValue: defaultValue, exposing: exposing).value }
        let panic = sdkStatus == .SDK_PANIC
        // The value is copied out of the lock, the entry only when its exposure is to be reported:
        // a read that reports nothing retains no more than the value it returns.
        let found = withState { state -> FoundFlag in
            guard !panic, state.fetchStatus != .PANIC, let entry = state.flags[key] else { return .missing }
            return exposing && !state.isExposureReported(entry) ? .toExpose(entry) : .found(entry.value)
        }
        let flagValue: FSJSONValue
        let toExpose: FlagEntry?
        switch found {
        case .missing: return defaultValue
        case .found(let value): (flagValue, toExpose) = (value, nil)
        case .toExpose(let entry): (flagValue, toExpose) = (entry.value, entry)
        }
        let value: T?
        if flagValue.isNull {
            value = defaultValue
        } else if let converted = FlagValue.convert(flagValue, to: T.self) {
            value = converted
        } else {
            logMismatch(key: key, value: flagValue, expected: T.self)
            return defaultValue
        }
        if let entry = toExpose {
            self.expose(entry, defaultValue: { defaultValue.flatMap { try? FSJSONValue(any: $0) } ?? .null })
        }
        return value
    }

    private enum FoundFlag {
        case missing
        case found(FSJSONValue)
        case toExpose(FlagEntry)
    }
}
