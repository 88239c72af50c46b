import Foundation

/// A value shared between threads, read and written only under its lock: the one copy every
/// target of the package uses (the SDK, the local server, the tools and the tests).
///
/// `Sendable` only when the value is: a lock protects the box, not a reference the value hands
/// out. `NSLock` rather than `Synchronization.Mutex`: the thread sanitizer sees it.
package final class Locked<Value> {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, under the lock.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// `@unchecked`: every access to `value` goes through `withLock`.
extension Locked: @unchecked Sendable where Value: Sendable {}
