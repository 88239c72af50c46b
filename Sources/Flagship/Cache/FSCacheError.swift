import Foundation

/// Why a default cache could not be opened.
public struct FSCacheError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ error: any Error) {
        description = String(describing: error)
    }
}
