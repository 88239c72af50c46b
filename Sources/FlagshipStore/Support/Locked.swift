import Foundation

/// A value shared between threads, read and written only under its lock: the one copy every
/// target of the package uses (the SDK, the local server, the tools and the tests).
///
/// `Sendable` only when the value is: a lock protects the box, not a reference the value hands
/// out. `NSLock` rather than `Synchronization.Mutex`: the thread sanitizer sees it.
package final class Locked<Value> {
    // `@usableFromInline`: `withLock` is inlined into its callers in other modules, so that a
    // flag read's lock is specialized for its types instead of instantiating them at run time.
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, under the lock.
    @inlinable
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// `@unchecked`: every access to `value` goes through `withLock`.
extension Locked: @unchecked Sendable where Value: Sendable {}

extension Locked where Value == Bool {
    /// Sets the flag; `true` for the one caller that found it unset (whoever comes first of a
    /// timeout and an answer, a second `close()`, a message said once).
    @inlinable
    package func setFirst() -> Bool {
        withLock { isSet in
            defer { isSet = true }
            return !isSet
        }
    }
}
