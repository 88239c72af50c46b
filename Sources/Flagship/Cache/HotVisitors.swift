import FlagshipStore
import Foundation

/// The documents of the visitors seen last, parsed, in memory: a returning visitor's lookup served
/// without reading the store or parsing its row again. The store stays the truth:
///
/// - an entry is served for `lifetime` after it was read from the store or written to it, then
///   read from the store again: what another instance of a fleet (or another process sharing the
///   file) changed is seen within that bound;
/// - a visitor erased in this process (consent withdrawn) leaves at once, and a lookup that read
///   the store before the erasure cannot put it back (each store read takes a ticket first);
/// - memory is bounded by `byteBudget` (the documents' JSON sizes): entries are kept in two
///   generations, the current one taking each entry served or written; when it holds half the
///   budget, the previous generation is dropped and the current one becomes it, so what goes is
///   what was least recently used, by halves. 0 keeps nothing.
final class HotVisitors: Sendable {
    struct Settings: Sendable, Equatable {
        /// The most bytes of documents kept (their JSON text's size). Default 16 MiB.
        var byteBudget = 16 << 20
        /// How long an entry is served after it was read from or written to the store. Default 2 s.
        var lifetime: TimeInterval = 2
    }

    private struct Entry {
        let document: VisitorCacheDocument
        let bytes: Int
        /// On the SDK's clock (`FlagshipConfig.now`), which tests move by hand.
        let storedAt: Date
    }

    private struct State {
        var current: [String: Entry] = [:]
        var currentBytes = 0
        var previous: [String: Entry] = [:]
        /// Taken by each store read; an erasure records the ticket after it.
        var nextTicket: UInt64 = 1
        /// Visitor id → the ticket when it was erased: a read with an older ticket puts nothing back.
        var erasedAt: [String: UInt64] = [:]
        /// Reads with a ticket below this put nothing back (`erasedAt` was forgotten past its bound).
        var ticketFloor: UInt64 = 0
        var hits = 0
        var misses = 0
    }

    /// Erasures remembered for reads under way, at most; past it every read under way is refused.
    static let erasuresKept = 4_096

    let settings: Settings
    private let now: @Sendable () -> Date
    private let state = Locked(State())

    init(_ settings: Settings, now: @escaping @Sendable () -> Date = Date.init) {
        self.settings = settings
        self.now = now
    }

    var isEnabled: Bool { settings.byteBudget > 0 && settings.lifetime > 0 }

    /// Whether an entry stored at `storedAt` is served at `now`: younger than the lifetime, and
    /// not from the future (a clock set back must not keep entries for as long as it stepped).
    private func isFresh(_ storedAt: Date, now: Date) -> Bool {
        let age = now.timeIntervalSince(storedAt)
        return age >= 0 && age < settings.lifetime
    }

    /// The visitor's document, if one is kept and younger than the lifetime.
    func document(for visitorId: String) -> VisitorCacheDocument? {
        guard isEnabled else { return nil }
        let now = now()
        return state.withLock { state in
            if let entry = state.current[visitorId] {
                guard isFresh(entry.storedAt, now: now) else {
                    state.current[visitorId] = nil
                    state.currentBytes -= entry.bytes
                    state.misses += 1
                    return nil
                }
                state.hits += 1
                return entry.document
            }
            guard let entry = state.previous.removeValue(forKey: visitorId) else {
                state.misses += 1
                return nil
            }
            guard isFresh(entry.storedAt, now: now) else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            Self.insert(entry, for: visitorId, into: &state, budget: settings.byteBudget)
            return entry.document
        }
    }

    /// Taken before a store read whose answer may be kept (`keep(_:bytes:ticket:)`).
    func ticket() -> UInt64 {
        state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
    }

    /// A document read from the store with `ticket`, or (no ticket) just written to it: kept,
    /// unless the visitor was erased since the read began.
    func keep(_ document: VisitorCacheDocument, bytes: Int, ticket: UInt64? = nil) {
        guard isEnabled, bytes <= settings.byteBudget / 2 else { return }
        let now = now()
        state.withLock { state in
            if let ticket {
                guard ticket >= state.ticketFloor, (state.erasedAt[document.visitorId] ?? 0) < ticket else { return }
            }
            if let old = state.current.removeValue(forKey: document.visitorId) { state.currentBytes -= old.bytes }
            state.previous[document.visitorId] = nil
            Self.insert(Entry(document: document, bytes: bytes, storedAt: now), for: document.visitorId, into: &state,
                        budget: settings.byteBudget)
        }
    }

    /// Consent withdrawn: the visitor is no longer served from memory, and no read under way
    /// puts it back.
    func erase(_ visitorId: String) {
        state.withLock { state in
            if let old = state.current.removeValue(forKey: visitorId) { state.currentBytes -= old.bytes }
            state.previous[visitorId] = nil
            if state.erasedAt.count >= Self.erasuresKept {
                state.erasedAt.removeAll(keepingCapacity: true)
                state.ticketFloor = state.nextTicket
            }
            state.erasedAt[visitorId] = state.nextTicket
            state.nextTicket += 1
        }
    }

    /// (served from memory, read from the store), since start.
    var counts: (hits: Int, misses: Int) {
        state.withLock { ($0.hits, $0.misses) }
    }

    /// Documents kept now, and their bytes (the current generation's; the previous one's are at
    /// most as many).
    var kept: (visitors: Int, currentBytes: Int) {
        state.withLock { ($0.current.count + $0.previous.count, $0.currentBytes) }
    }

    private static func insert(_ entry: Entry, for visitorId: String, into state: inout State, budget: Int) {
        if state.currentBytes + entry.bytes > budget / 2 {
            // The least recently used half goes: the generation before this one.
            state.previous = state.current
            state.current = [:]
            state.currentBytes = 0
        }
        state.current[visitorId] = entry
        state.currentBytes += entry.bytes
    }
}
