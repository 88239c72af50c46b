/// Why a soak run could not be made or written; each names what to fix.
enum SoakError: Error, CustomStringConvertible, Equatable {
    /// The bucketing fixture could not be built.
    case fixture(String)
    /// The temporary directory, or a file the run writes, could not be made.
    case fileSystem(path: String, reason: String)
    /// The local server could not start.
    case server(String)
    /// An option value the run cannot use.
    case invalidOption(String)

    var description: String {
        switch self {
        case .fixture(let reason): return "fixture: \(reason)"
        case .fileSystem(let path, let reason): return "\(path): \(reason)"
        case .server(let reason): return "local server: \(reason)"
        case .invalidOption(let reason): return reason
        }
    }
}
