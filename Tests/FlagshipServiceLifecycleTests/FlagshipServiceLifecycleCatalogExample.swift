#if ServiceLifecycle
// The example of FlagshipServiceLifecycle's catalog (Sources/FlagshipServiceLifecycle/FlagshipServiceLifecycle.docc),
// verbatim: compiled here, by the build that compiles swift-service-lifecycle for these tests
// (DocumentationSnippetTests checks it).
import Flagship
import FlagshipServiceLifecycle
import Logging
import ServiceLifecycle

func runService(_ app: some Service, logger: Logger) async throws {
    let flags = FlagshipService(envId: "env", apiKey: "key", config: FSConfigBuilder().withLogger(logger).build())
    let group = ServiceGroup(configuration: ServiceGroupConfiguration(
        services: [.init(service: flags), .init(service: app)],
        gracefulShutdownSignals: [.sigterm],
        logger: logger))
    try await group.run()
}
#endif
