import Foundation

/// A value guarded by a lock, for state that tests, the socket thread and request tasks share.
///
/// NSLock rather than `Synchronization.Mutex`: the thread sanitizer sees it, and it needs no
/// newer macOS than the package's.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
