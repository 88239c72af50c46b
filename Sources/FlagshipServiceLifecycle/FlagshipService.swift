#if ServiceLifecycle
import Flagship
import Foundation
import Logging
import ServiceLifecycle

/// The Flagship SDK as a swift-service-lifecycle `Service`: started when its `ServiceGroup`
/// runs it, closed when the group shuts down gracefully (SIGTERM, say) or is cancelled.
///
/// Closing keeps `close()`'s deadline (a last flush of at most 5 s): what could not be sent in
/// that time stays in the hit cache, counted in one log line, and is replayed at the next start.
/// A group runs its services at once, in no set order: a service that uses the SDK awaits
/// `started()` first (a visitor built before `start` has no SDK behind it). Put the services
/// that send hits after this one in the group: a group shuts its services down in the reverse
/// order of the list, so they stop sending before the SDK closes.
///
/// ```swift
/// let flags = FlagshipService(envId: "env", apiKey: key, config: FSConfigBuilder().Bucketing().build())
/// let group = ServiceGroup(configuration: .init(
///     services: [flags, httpServer],
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger))
/// try await group.run()
/// ```
public struct FlagshipService: Service, CustomStringConvertible {
    /// The instance the service starts and closes (by default the shared one).
    public let flagship: Flagship
    private let envId: String
    private let apiKey: String
    private let config: FlagshipConfig
    /// Whether `run()` started the SDK: what `started()` awaits.
    private let start = OneShot<Result<Void, FlagshipServiceError>>()

    /// A service that starts `flagship` for `envId` and `apiKey` with `config` when run; nothing
    /// is checked or started before `run()`.
    public init(flagship: Flagship = .sharedInstance, envId: String, apiKey: String,
                config: FlagshipConfig = FSConfigBuilder().build()) {
        self.flagship = flagship
        self.envId = envId
        self.apiKey = apiKey
        self.config = config
    }

    /// Starts the SDK, awaits its background work (`Flagship.run()`) until the group shuts down
    /// or is cancelled, then returns once the SDK is closed. Code that closes the SDK itself
    /// (`close()`) ends this too, and a group ends with a service that returns unless it was
    /// configured otherwise (`successTerminationBehavior`).
    ///
    /// - Throws: ``FlagshipServiceError`` with code `.refused` at once when the env id or the API key cannot be
    ///   used (empty, or holding characters they never hold): the group then fails at start
    ///   instead of serving default values. Nothing else: closing never fails, it runs out of time.
    public func run() async throws {
        if let problem = Flagship.problem(envId: envId, apiKey: apiKey) {
            let error = FlagshipServiceError.refused(problem)
            start.fulfil(.failure(error))
            throw error
        }
        // Opening the store blocks: on a thread of its own, never one of the cooperative pool.
        await flagship.startOffThePool(envId: envId, apiKey: apiKey, config: config)
        start.fulfil(.success(()))
        // The SDK's background work, awaited until closed: by the graceful shutdown, or by a
        // cancellation of the group (`run()` then closes it itself). Either way the last flush
        // runs whole, bounded by close()'s own deadline, before this returns.
        let flagship = flagship
        await withGracefulShutdownHandler {
            await flagship.run()
        } onGracefulShutdown: {
            Task { await flagship.close() }
        }
    }

    /// Returns once `run()` has started the SDK: what a service of the same group awaits before
    /// it builds visitors.
    ///
    /// - Throws: ``FlagshipServiceError`` with code `.refused` when `run()` refused the credentials, and
    ///   `CancellationError` when the waiting task is cancelled first.
    public func started() async throws {
        guard let outcome = await start.value() else { throw CancellationError() }
        try outcome.get()
    }

    /// `FlagshipService(envId: ...)`, as the group's logs name the service; never the API key.
    public var description: String {
        "FlagshipService(envId: \(envId))"
    }
}

/// Why `FlagshipService` did not run. A struct with a ``code`` to switch on and its detail
/// (``reason``) as a property, as async-http-client's and postgres-nio's errors are: a new code is
/// a new static member, not a breaking change, and a `switch` needs a `default`. ``description`` is
/// the line to log.
///
/// ```swift
/// do {
///     try await flags.started()
/// } catch let error as FlagshipServiceError {
///     switch error.code {
///     case .refused: print("check FLAGSHIP_ENV_ID and FLAGSHIP_API_KEY:", error.reason ?? "")
///     default: print(error)
///     }
/// }
/// ```
public struct FlagshipServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case refused
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The env id or the API key was refused before anything was sent:
        /// ``FlagshipServiceError/reason`` names which.
        public static let refused = Code(.refused)

        /// The code's name as written here (`refused`), for a log.
        public var description: String { base.rawValue }
    }

    /// What kind of error this is.
    public let code: Code
    /// Why, as a phrase (`the API key is empty`); set for ``Code/refused``.
    public let reason: String?
    /// `Flagship not started: <reason>`, for a log.
    public let description: String

    private init(code: Code, reason: String?, description: String) {
        self.code = code
        self.reason = reason
        self.description = description
    }

    /// The env id or the API key was refused before anything was sent, for `reason` (``Code/refused``).
    public static func refused(_ reason: String) -> FlagshipServiceError {
        FlagshipServiceError(code: .refused, reason: reason, description: "Flagship not started: \(reason)")
    }
}
#endif
