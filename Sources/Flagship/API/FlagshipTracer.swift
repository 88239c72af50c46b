/// Where the SDK's outbound work is traced: a span per `fetchFlags` and per batch of hits sent,
/// and the trace context carried to every request made inside a span. Give one with
/// `FSConfigBuilder.withTracer`; the `FlagshipTracing` product implements it with
/// swift-distributed-tracing, so the app's tracer (swift-otel's, say) sees the spans and its
/// propagator writes the headers (W3C `traceparent`). The SDK itself depends on no tracing library.
public protocol FlagshipTracer: Sendable {
    /// Runs `operation` inside a client span named `name`, with `attributes` set at its start;
    /// `operation` may set more on the span it is given. A thrown error is recorded on the span
    /// and rethrown.
    func withSpan<T>(_ name: String, attributes: [String: String],
                     _ operation: (any FlagshipSpan) async throws -> T) async rethrows -> T
    /// The headers that carry the current trace context to a request made now (inside a span of
    /// `withSpan`): added to the request's own.
    func propagationHeaders() -> [String: String]
}

/// A span of a `FlagshipTracer`, while its operation runs.
public protocol FlagshipSpan: Sendable {
    /// Sets a string attribute on the span (the SDK sets `flagship.outcome`, for one).
    func setAttribute(_ key: String, _ value: String)
}

/// `operation` in a span of `tracer`, or without one when there is no tracer.
func traced<T>(_ tracer: (any FlagshipTracer)?, _ name: String, attributes: [String: String],
               _ operation: ((any FlagshipSpan)?) async throws -> T) async rethrows -> T {
    guard let tracer else { return try await operation(nil) }
    return try await tracer.withSpan(name, attributes: attributes) { try await operation($0) }
}

/// Adds the current trace context's headers to every request (`FlagshipTracer.propagationHeaders`).
struct TracePropagatingTransport: HTTPTransport {
    let base: any HTTPTransport
    let tracer: any FlagshipTracer

    func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse {
        var request = request
        for (name, value) in tracer.propagationHeaders() where request.headers[name] == nil {
            request.headers[name] = value
        }
        return try await base.send(request)
    }

    func shutdown() async {
        await base.shutdown()
    }
}
