import Foundation

@testable import Flagship

/// A custom hit cache over a dictionary, with a gate on lookups when asked.
final class MemoryHitCache: FSHitCacheDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var hits: [String: [String: Any]] = [:]
    let gated: Bool
    let gate = DispatchSemaphore(value: 0)

    init(gated: Bool = false) {
        self.gated = gated
    }

    var ids: Set<String> {
        lock.lock()
        defer { lock.unlock() }
        return Set(hits.keys)
    }

    /// How many times each call was made.
    private(set) var calls: [String: Int] = [:]

    func count(_ call: String) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return calls[call, default: 0]
    }

    /// A stored document, as the cache received it.
    func document(_ id: String) -> [String: Any]? {
        lock.lock()
        defer { lock.unlock() }
        return hits[id]
    }

    func cacheHits(hits newHits: [String: [String: Any]]) {
        lock.lock()
        calls["cacheHits", default: 0] += 1
        hits.merge(newHits) { $1 }
        lock.unlock()
    }

    func lookupHits() -> [String: [String: Any]] {
        if gated { gate.wait() }
        lock.lock()
        calls["lookupHits", default: 0] += 1
        defer { lock.unlock() }
        return hits
    }

    func flushHits(hitIds: [String]) {
        lock.lock()
        calls["flushHits", default: 0] += 1
        for id in hitIds { hits[id] = nil }
        lock.unlock()
    }

    func flushAllHits() {
        lock.lock()
        hits.removeAll()
        lock.unlock()
    }
}

