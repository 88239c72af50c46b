import Foundation

/// A value shared between threads, read and written only under its lock.
///
/// `NSLock` rather than `Synchronization.Mutex`: the thread sanitizer sees it.
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
