#if Tracing
import Flagship
import Tracing

/// A `FlagshipHook` that adds an event to the current span for each flag evaluation, named and
/// described as OpenTelemetry's feature-flag conventions say: register it with
/// `FSConfigBuilder.withHooks` (or on one visitor). A read made outside any span adds nothing.
///
/// ```swift
/// let config = FSConfigBuilder().Bucketing().withHooks([FlagshipEvaluationTracing()]).build()
/// ```
///
/// | event | attributes |
/// |---|---|
/// | `feature_flag.evaluation` | `feature_flag.key`, `feature_flag.provider.name` (`Flagship`), `feature_flag.context.id` (the visitor id), `feature_flag.result.reason` (`split`, `targeting_match`...), `feature_flag.result.variant` (the variation id, when a campaign gives the flag), `error.type` and `error.message` on an error (`flag_not_found`, `type_mismatch`...) |
///
/// The flag's value is not put on the event: it may be personal data. The visitor id is, as the
/// convention asks (`FlagshipTracing`'s spans carry none): leave this hook out where spans must not.
public struct FlagshipEvaluationTracing: FlagshipHook {
    private let tracer: (any Tracer)?

    /// - Parameter tracer: the tracer whose active span gets the events; by default the one
    ///   `InstrumentationSystem.bootstrap` set.
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// Adds the evaluation's event to the current span.
    public func after(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) {
        addEvent(evaluation, result)
    }

    /// Adds the evaluation's event, with its error, to the current span.
    public func error(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) {
        addEvent(evaluation, result)
    }

    private func addEvent(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) {
        guard let context = InstrumentationContext.current,
              let span = (tracer ?? InstrumentationSystem.tracer).activeSpan(identifiedBy: context)
        else { return }
        var attributes: SpanAttributes = [:]
        attributes["feature_flag.key"] = evaluation.flagKey
        attributes["feature_flag.provider.name"] = "Flagship"
        attributes["feature_flag.context.id"] = evaluation.visitorId
        attributes["feature_flag.result.reason"] = result.reason.rawValue.lowercased()
        if !result.variationId.isEmpty {
            attributes["feature_flag.result.variant"] = result.variationId
        }
        if let errorCode = result.errorCode {
            attributes["error.type"] = errorCode.rawValue.lowercased()
            if let message = result.errorMessage { attributes["error.message"] = message }
        }
        span.addEvent(SpanEvent(name: "feature_flag.evaluation", attributes: attributes))
    }
}
#endif
