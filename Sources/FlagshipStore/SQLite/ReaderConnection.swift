import Foundation

/// The read-only connection of `Database.readBesideWrites`: one read at a time, under its lock.
///
/// `@unchecked Sendable`: the connection is only used under `lock`.
final class ReaderConnection: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: Connection?

    init(_ connection: Connection) {
        self.connection = connection
    }

    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { throw StoreError.closed }
        return try connection.transaction(immediate: false, body)
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        connection?.close(checkpoint: false)
        connection = nil
    }
}
