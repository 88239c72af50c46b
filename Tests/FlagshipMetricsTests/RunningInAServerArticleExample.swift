#if Metrics && Tracing
// The second example of RunningInAServer.md (Sources/Flagship/Flagship.docc), verbatim: compiled here, by
// the build that compiles swift-metrics and swift-distributed-tracing for these tests
// (DocumentationSnippetTests checks it).
import Flagship
import FlagshipMetrics
import FlagshipTracing
import Logging

func flagshipConfig(logger: Logger) -> FlagshipConfig {
    FSConfigBuilder().DecisionApi()
        .withLogger(logger)                         // its handler, metadata and level
        .withInstrumentation(FlagshipMetrics())     // through the bootstrapped MetricsSystem
        .withTracer(FlagshipTracing())              // through the bootstrapped InstrumentationSystem
        .build()
}
#endif
