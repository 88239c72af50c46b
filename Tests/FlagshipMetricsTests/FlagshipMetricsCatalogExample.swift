#if Metrics
// The example of FlagshipMetrics's catalog (Sources/FlagshipMetrics/FlagshipMetrics.docc), verbatim:
// compiled here, by the build that compiles swift-metrics for these tests (DocumentationSnippetTests checks it).
import Flagship
import FlagshipMetrics

let config = FSConfigBuilder().DecisionApi()
    .withInstrumentation(FlagshipMetrics())
    .withHooks([FlagshipEvaluationMetrics()])   // flag evaluations, by flag, reason and error code
    .build()
#endif
