#if AsyncHTTPClient
// The example of FlagshipAsyncHTTPClient's catalog (Sources/FlagshipAsyncHTTPClient/FlagshipAsyncHTTPClient.docc)
// and of RunningInAServer.md, the same block in both, verbatim: compiled here, by the build that
// compiles async-http-client for these tests (DocumentationSnippetTests checks it).
import AsyncHTTPClient
import Flagship
import FlagshipAsyncHTTPClient

/// The SDK's requests on the app's own client: its connection pool, its event loops.
func startOnTheAppsHTTPClient(envId: String, apiKey: String, client: HTTPClient) {
    let config = FSConfigBuilder()
        .DecisionApi()
        .withHTTPTransport(AsyncHTTPClientTransport(client: client))
        .build()
    Flagship.sharedInstance.start(envId: envId, apiKey: apiKey, config: config)
}

/// The client an app makes for it: redirects left to the SDK, which follows them within the
/// origin only (the API key goes nowhere else).
func makeTheAppsHTTPClient() -> HTTPClient {
    HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup,
               configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
}
#endif
