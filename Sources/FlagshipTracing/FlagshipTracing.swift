#if Tracing
import Flagship
import Tracing

/// The SDK's spans through swift-distributed-tracing: a client span per `fetchFlags`
/// (`flagship.fetchFlags`) and per batch of hits sent (`flagship.batch`), and the trace context
/// of the current span injected into every request by the tracer's propagator (W3C
/// `traceparent` with swift-otel's). A span started by the app (its request handler's) is the
/// parent of the SDK's.
///
/// ```swift
/// let config = FSConfigBuilder().Bucketing().withTracer(FlagshipTracing()).build()
/// ```
///
/// | span | attributes |
/// |---|---|
/// | `flagship.fetchFlags` | `flagship.env_id`, `flagship.decision_source` (decision_api, bucketing), `flagship.outcome` (success, panic), `flagship.campaigns`; an error recorded on failure |
/// | `flagship.batch` | `flagship.endpoint` (events, activate), `flagship.hits`, `flagship.outcome` (delivered, failed, rejected) |
public struct FlagshipTracing: FlagshipTracer {
    private let tracer: (any Tracer)?

    /// - Parameter tracer: the tracer to use; by default the one `InstrumentationSystem.bootstrap` set.
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// Runs `operation` in a client span named `name` of the tracer given at `init` (else the
    /// bootstrapped one), with `attributes` set; a thrown error is recorded on the span and
    /// rethrown.
    public func withSpan<T>(_ name: String, attributes: [String: String],
                            _ operation: (any FlagshipSpan) async throws -> T) async rethrows -> T {
        if let tracer {
            return try await Self.run(tracer, name, attributes, operation)
        }
        return try await Self.run(InstrumentationSystem.tracer, name, attributes, operation)
    }

    private static func run<T, Used: Tracer>(_ tracer: Used, _ name: String, _ attributes: [String: String],
                                             _ operation: (any FlagshipSpan) async throws -> T) async rethrows -> T {
        try await tracer.withSpan(name, ofKind: .client) { span in
            for (key, value) in attributes { span.attributes[key] = value }
            return try await operation(SpanAttributesSetter(span: span))
        }
    }

    /// The current trace context as headers, written by the tracer's propagator (the bootstrapped
    /// instrument when no tracer was given); none when the task carries no trace context.
    public func propagationHeaders() -> [String: String] {
        guard let context = InstrumentationContext.current else { return [:] }
        var headers: [String: String] = [:]
        if let tracer {
            tracer.inject(context, into: &headers, using: HeadersInjector())
        } else {
            InstrumentationSystem.instrument.inject(context, into: &headers, using: HeadersInjector())
        }
        return headers
    }
}

/// Sets attributes on a span while its operation runs.
private struct SpanAttributesSetter<Wrapped: Span>: FlagshipSpan {
    let span: Wrapped

    func setAttribute(_ key: String, _ value: String) {
        span.attributes[key] = value
    }
}

/// Writes the propagator's values as request headers.
private struct HeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout [String: String]) {
        headers[key] = value
    }
}
#endif
