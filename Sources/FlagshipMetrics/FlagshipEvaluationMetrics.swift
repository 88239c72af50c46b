#if Metrics
import Flagship
import FlagshipStore
import Metrics

/// A `FlagshipHook` that counts flag evaluations through swift-metrics, by flag, reason and error
/// code: register it with `FSConfigBuilder.withHooks` (or on one visitor).
///
/// ```swift
/// let config = FSConfigBuilder().Bucketing().withHooks([FlagshipEvaluationMetrics()]).build()
/// ```
///
/// | metric | type | dimensions |
/// |---|---|---|
/// | `flagship_flag_evaluations_total` | counter | `flag`: the key, or `other`; `reason`: static, default, targeting_match, split, cached, disabled, stale, error; `error_code`: none, flag_not_found, type_mismatch, provider_not_ready, parse_error, general |
///
/// An app can read any key, one no campaign gives included, so the `flag` dimension is bounded:
/// the first `maxFlagKeys` keys evaluated (500 by default) each have their own value, and every
/// later key is counted under `other`. Each counter is made once; an evaluation is then a lookup
/// under a lock and an increment.
public struct FlagshipEvaluationMetrics: FlagshipHook {
    /// The `flag` dimension's value for the keys past `maxFlagKeys`.
    public static let otherFlags = "other"

    private let counters: EvaluationCounters

    /// - Parameters:
    ///   - maxFlagKeys: how many flag keys get a `flag` value of their own (500 by default); later
    ///     keys are counted under `other`.
    ///   - factory: where the metrics go; by default the one `MetricsSystem.bootstrap` set.
    public init(maxFlagKeys: Int = 500, factory: any MetricsFactory = MetricsSystem.factory) {
        counters = EvaluationCounters(maxFlagKeys: max(0, maxFlagKeys), factory: factory)
    }

    /// Counts an evaluation without error.
    public func after(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) {
        counters.count(evaluation.flagKey, result)
    }

    /// Counts an evaluation with an error code.
    public func error(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) {
        counters.count(evaluation.flagKey, result)
    }
}

/// The counters made so far, by flag dimension, reason and error code.
private final class EvaluationCounters: Sendable {
    private struct Key: Hashable {
        let flag: String
        let reason: FSFlagReason
        let errorCode: FSFlagErrorCode?
    }

    private struct State {
        var counters: [Key: Counter] = [:]
        var flags: Set<String> = []
    }

    private let state = Locked(State())
    private let maxFlagKeys: Int
    private let factory: any MetricsFactory

    init(maxFlagKeys: Int, factory: any MetricsFactory) {
        self.maxFlagKeys = maxFlagKeys
        self.factory = factory
    }

    func count(_ flagKey: String, _ result: FSEvaluationResult) {
        let counter = state.withLock { state -> Counter in
            let flag: String
            if state.flags.contains(flagKey) {
                flag = flagKey
            } else if state.flags.count < maxFlagKeys {
                state.flags.insert(flagKey)
                flag = flagKey
            } else {
                flag = FlagshipEvaluationMetrics.otherFlags
            }
            let key = Key(flag: flag, reason: result.reason, errorCode: result.errorCode)
            if let counter = state.counters[key] { return counter }
            let counter = Counter(label: "flagship_flag_evaluations_total",
                                  dimensions: [("flag", flag), ("reason", result.reason.rawValue.lowercased()),
                                               ("error_code", result.errorCode?.rawValue.lowercased() ?? "none")],
                                  factory: factory)
            state.counters[key] = counter
            return counter
        }
        counter.increment()
    }
}
#endif
