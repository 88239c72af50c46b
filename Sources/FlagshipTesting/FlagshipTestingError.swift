/// Why a ``FlagshipTestEnvironment`` could not do what a test asked. A struct with a ``code`` to
/// switch on and the details as properties (``reason``, ``waiting``, ``network``), as
/// async-http-client's and postgres-nio's errors are: a new code is a new static member, not a
/// breaking change, and a `switch` needs a `default`. Errors are made and compared as before
/// (`XCTAssertEqual(error, .timedOut(waiting: 1))`); ``description`` is the line for a test's
/// failure message.
///
/// ```swift
/// do {
///     try await environment.waitUntilDelivered(timeout: .seconds(2))
/// } catch let error as FlagshipTestingError {
///     switch error.code {
///     case .undelivered: XCTFail("no network: \(error.waiting ?? 0) hit(s) wait")
///     case .timedOut: XCTFail("\(error.waiting ?? 0) hit(s) still wait")
///     default: XCTFail("\(error)")
///     }
/// }
/// ```
public struct FlagshipTestingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidEnvId, undelivered, timedOut, closed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The env id is refused by `Flagship.start`: ``FlagshipTestingError/reason`` says why.
        public static let invalidEnvId = Code(.invalidEnvId)
        /// `waitUntilDelivered()`: hits wait (``FlagshipTestingError/waiting``), but the network
        /// (``FlagshipTestingError/network``) is not available.
        public static let undelivered = Code(.undelivered)
        /// `waitUntilDelivered(timeout:)`: hits still wait at the timeout
        /// (``FlagshipTestingError/waiting``), the network available.
        public static let timedOut = Code(.timedOut)
        /// The environment was closed.
        public static let closed = Code(.closed)

        /// The code's name as written here (`undelivered`, `timedOut`...), for a log.
        public var description: String { base.rawValue }
    }

    /// What kind of error this is.
    public let code: Code
    /// Why the env id is refused, as a phrase (``Code/invalidEnvId``), `nil` for any other code.
    public let reason: String?
    /// How many hits and activates wait to be sent (``Code/undelivered``, ``Code/timedOut``), `nil`
    /// for any other code.
    public let waiting: Int?
    /// The network condition that keeps them from being delivered (``Code/undelivered``), `nil` for
    /// any other code.
    public let network: TestNetworkCondition?
    /// What went wrong, as one line for a test's failure message.
    public let description: String

    private init(code: Code, reason: String? = nil, waiting: Int? = nil, network: TestNetworkCondition? = nil,
                 description: String) {
        self.code = code
        self.reason = reason
        self.waiting = waiting
        self.network = network
        self.description = description
    }

    /// The env id is refused by `Flagship.start`, for `reason` (``Code/invalidEnvId``).
    public static func invalidEnvId(_ reason: String) -> FlagshipTestingError {
        FlagshipTestingError(code: .invalidEnvId, reason: reason, description: "the env id is refused: \(reason)")
    }

    /// `waiting` hits wait, and the network is `network`, not available (``Code/undelivered``).
    public static func undelivered(waiting: Int, network: TestNetworkCondition) -> FlagshipTestingError {
        FlagshipTestingError(code: .undelivered, waiting: waiting, network: network,
                             description: "\(waiting) hit(s) wait to be sent, and the network is \(network): none can be delivered")
    }

    /// `waiting` hits still wait at the timeout (``Code/timedOut``).
    public static func timedOut(waiting: Int) -> FlagshipTestingError {
        FlagshipTestingError(code: .timedOut, waiting: waiting, description: "\(waiting) hit(s) still wait to be sent at the timeout")
    }

    /// The environment was closed (``Code/closed``).
    public static let closed = FlagshipTestingError(code: .closed, description: "the test environment is closed")
}
