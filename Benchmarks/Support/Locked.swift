import Foundation

/// A value shared by the tasks of a round, under a lock.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    // `@unchecked`: `value` is read and written under `lock` only.
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
