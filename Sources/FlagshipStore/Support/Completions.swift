import Dispatch

/// The serial queue of the SDK's short completions: the deadlines' timer fires on it
/// (`DeadlineTimer`: a visitor lookup's timeout, an HTTP exchange's, `close()`'s, and the SDK's
/// sleeps), and the URLSession transport's delegate is called on it (an answer's head, its bytes,
/// its end). Each handler resumes a waiter, sets a flag or copies bytes under a lock; none blocks.
///
/// A serial queue on libdispatch's default target gets a thread as soon as it has work, even
/// while the app's work holds every thread of the global pool, which on Linux is also the pool
/// Swift's global executor runs its tasks on. A global queue, or a concurrent one, waits for a
/// thread of that pool: there a 50 ms deadline had not fired after 4 s, and, with
/// FoundationNetworking's default delegate queue (an `OperationQueue` over a concurrent queue), no
/// answer came within an exchange's 2 s, so every request of the background sender timed out
/// (`HeldPoolRequestTests`).
package enum Completions {
    package static let queue = DispatchQueue(label: "io.flagship.completions")
}
