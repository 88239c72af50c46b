extension Duration {
    /// This duration in seconds, as a `Double`: for `TimeInterval`s, rates and log lines.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// This duration in milliseconds, as a `Double`.
    package var inMilliseconds: Double {
        Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
    }
}
