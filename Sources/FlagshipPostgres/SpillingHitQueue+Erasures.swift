#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging

/// Consent withdrawals in both stores, and those kept in the spill until PostgreSQL answers again.
extension SpillingHitQueue {
    /// Consent withdrawn: the visitor's document and hits in both stores, each in one
    /// transaction. PostgreSQL away, the erasure is kept in the local store and carried out as
    /// soon as PostgreSQL answers again (a restart included), sparing what was written after the
    /// withdrawal; one warning says so.
    func erase(visitorId: String, keeping: Set<String>) async throws -> Int {
        let local = try await spill.erase(visitorId: visitorId, keeping: keeping)
        let withdrawnAt = now()
        guard primaryIsUp else {
            try keepErasure(visitorId, PendingErasure(withdrawnAt: withdrawnAt, keeping: keeping.sorted()))
            return local
        }
        do {
            let shared = try await primary.erase(visitorId: visitorId, keeping: keeping)
            return local + shared
        } catch {
            primaryFailed(error)
            try keepErasure(visitorId, PendingErasure(withdrawnAt: withdrawnAt, keeping: keeping.sorted()))
            return local
        }
    }

    func keepErasure(_ visitorId: String, _ erasure: PendingErasure) throws {
        guard let store = spill.store, store.opening.readOnly == nil else {
            throw FlagshipPostgresError(code: .unreachable, description: "the visitor's data in PostgreSQL could not be erased: PostgreSQL cannot be reached, and the local store, which would keep the erasure until it can, cannot be written")
        }
        let text = String(decoding: try JSONEncoder().encode(erasure), as: UTF8.self)
        try store.write { try $0.state.setValue(text, forKey: PendingErasure.keyPrefix + visitorId, now: erasure.withdrawnAt) }
        state.withLock { $0.erasuresWaiting = true }
        logger.warning("Consent withdrawn while the PostgreSQL store cannot be reached: the visitor's data there is erased as soon as it answers again (kept in the local store until then)",
                       metadata: logger.logLevel <= .debug ? ["visitor_id": .string(visitorId)] : nil)
    }

    /// Carries out the consent erasures PostgreSQL missed, when it is up; each leaves the local
    /// store once PostgreSQL took it. The sender's (its claims and settlements call it), awaited.
    func carryOutErasures() async {
        guard primaryIsUp, state.withLock({ $0.erasuresWaiting }), let store = spill.store else { return }
        let waiting: [(visitorId: String, erasure: PendingErasure?)]
        do {
            waiting = try await store.read(cancellable: false) { try $0.state.all() }
                .filter { $0.key.hasPrefix(PendingErasure.keyPrefix) }
                .map { (String($0.key.dropFirst(PendingErasure.keyPrefix.count)),
                        try? JSONDecoder().decode(PendingErasure.self, from: Data($0.value.utf8))) }
        } catch {
            logger.warning("Consent erasures waiting for PostgreSQL could not be read from the local store: \(error)")
            return
        }
        var done = 0
        for (visitorId, erasure) in waiting {
            do {
                // A row that is not an erasure this SDK wrote (edited by hand) erases everything
                // written until now: the safe reading of a withdrawal.
                _ = try await primary.erase(visitorId: visitorId, keeping: Set(erasure?.keeping ?? []),
                                            writtenUpTo: erasure?.withdrawnAt ?? now())
                try await store.write(cancellable: false) { try $0.state.removeValue(forKey: PendingErasure.keyPrefix + visitorId) }
                done += 1
            } catch {
                primaryFailed(error)
                return
            }
        }
        state.withLock { $0.erasuresWaiting = false }
        if done > 0 {
            logger.info("PostgreSQL answers again: \(done) consent erasure(s) it missed are carried out")
        }
    }
}
#endif
