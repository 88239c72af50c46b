import Dispatch

/// One dispatch timer for every wait the SDK bounds on the wall clock (a visitor lookup, an HTTP
/// exchange) and every sleep of its background tasks, instead of a timer each.
///
/// `DispatchQueue.asyncAfter` registers a timer with libdispatch's manager thread for every call
/// and cannot take it back: at a few thousand visitor lookups a second, the manager thread's
/// timer heap, the wake-ups it costs and the late no-op firings took about 8% of the server
/// loop's CPU (callgrind/perf). Here a wait that ends in time is removed from a heap under a
/// lock, and the one timer source is re-armed only when an earlier deadline arrives.
package final class DeadlineTimer: @unchecked Sendable {
    // `@unchecked`: `timer` (a dispatch source, not `Sendable`) is armed under `state`'s lock only.
    package static let shared = DeadlineTimer()

    /// A scheduled action, to cancel once what it bounds has ended.
    package struct Token: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        let deadline: DispatchTime
        let id: UInt64
    }

    private struct State {
        /// A min-heap of deadlines; entries whose action is gone are skipped when they surface.
        var heap: [Entry] = []
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextId: UInt64 = 0
        /// The deadline the timer is armed for, if any.
        var armed: DispatchTime?
    }

    private let state = Locked(State())
    private let timer: any DispatchSourceTimer

    package init() {
        // On the SDK's serial queue of short completions, which gets a thread even while the
        // app's work holds the global pool (`Completions`). The actions are short (a
        // continuation resumed, a flag set).
        timer = DispatchSource.makeTimerSource(queue: Completions.queue)
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.activate()
    }

    /// Runs `action` at `deadline` (on the timer's handler, one action after the other), unless
    /// cancelled first.
    @discardableResult
    package func schedule(at deadline: DispatchTime, _ action: @escaping @Sendable () -> Void) -> Token {
        // The timer is (re-)armed under the lock, so a firing that re-arms it for a later deadline
        // cannot overtake this earlier one.
        state.withLock { state -> Token in
            state.nextId += 1
            let id = state.nextId
            state.actions[id] = action
            Self.push(Entry(deadline: deadline, id: id), into: &state.heap)
            if state.armed.map({ deadline < $0 }) ?? true {
                state.armed = deadline
                timer.schedule(deadline: deadline, leeway: .milliseconds(1))
            }
            return Token(id: id)
        }
    }

    /// The action will not run (if it has not begun already).
    package func cancel(_ token: Token) {
        state.withLock { state in
            state.actions[token.id] = nil
            // Drop cancelled entries at the top at once, so the heap stays as small as the waits.
            while let top = state.heap.first, state.actions[top.id] == nil {
                Self.popTop(from: &state.heap)
            }
            if state.heap.isEmpty { state.actions.removeAll(keepingCapacity: true) }
        }
    }

    /// Runs what is due, and re-arms the timer for the next live deadline.
    private func fire() {
        let now = DispatchTime.now()
        let due = state.withLock { state -> [@Sendable () -> Void] in
            var due: [@Sendable () -> Void] = []
            while let top = state.heap.first {
                if let action = state.actions[top.id] {
                    guard top.deadline <= now else { break }
                    due.append(action)
                    state.actions[top.id] = nil
                }
                Self.popTop(from: &state.heap)
            }
            state.armed = state.heap.first?.deadline
            if let next = state.armed { timer.schedule(deadline: next, leeway: .milliseconds(1)) }
            return due
        }
        for action in due { action() }
    }

    package var pendingCount: Int {
        state.withLock { $0.actions.count }
    }

    private static func push(_ entry: Entry, into heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popTop(from heap: inout [Entry]) {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
