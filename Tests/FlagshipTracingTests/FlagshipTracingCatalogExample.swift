#if Tracing
// The example of FlagshipTracing's catalog (Sources/FlagshipTracing/FlagshipTracing.docc), verbatim:
// compiled here, by the build that compiles swift-distributed-tracing for these tests (DocumentationSnippetTests checks it).
import Flagship
import FlagshipTracing

let config = FSConfigBuilder().DecisionApi()
    .withTracer(FlagshipTracing())
    .withHooks([FlagshipEvaluationTracing()])   // an event on the current span per flag evaluation
    .build()
#endif
