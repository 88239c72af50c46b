/// Runs `work` as a child task of the caller's until `stop` finishes, then cancels it, and
/// returns once it has ended: a background loop that its owner ends by finishing a stream (the
/// bucketing poller, the retention), a child of the SDK instance's one background task.
func runUntil(_ stop: AsyncStream<Void>, _ work: @escaping @Sendable () async -> Void) async {
    await withDiscardingTaskGroup { group in
        group.addTask(operation: work)
        for await _ in stop {}
        group.cancelAll()
    }
}
