/// Why a ``FlagshipTestEnvironment`` could not do what a test asked.
public enum FlagshipTestingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The env id is refused by `Flagship.start` (why, as a phrase).
    case invalidEnvId(String)
    /// `waitUntilDelivered()`: hits wait, but the network is not available.
    case undelivered(waiting: Int, network: TestNetworkCondition)
    /// `waitUntilDelivered(timeout:)`: hits still wait at the timeout, the network available.
    case timedOut(waiting: Int)
    /// The environment was closed.
    case closed

    /// What went wrong, as one line for a test's failure message.
    public var description: String {
        switch self {
        case .invalidEnvId(let reason):
            return "the env id is refused: \(reason)"
        case .undelivered(let waiting, let network):
            return "\(waiting) hit(s) wait to be sent, and the network is \(network): none can be delivered"
        case .timedOut(let waiting):
            return "\(waiting) hit(s) still wait to be sent at the timeout"
        case .closed:
            return "the test environment is closed"
        }
    }
}
