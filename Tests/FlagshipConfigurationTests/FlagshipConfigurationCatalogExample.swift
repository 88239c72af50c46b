#if Configuration
// The example of FlagshipConfiguration's catalog (Sources/FlagshipConfiguration/FlagshipConfiguration.docc) and of
// RunningInAServer.md, the same block in both, verbatim: compiled here, by the build that compiles
// swift-configuration for these tests (DocumentationSnippetTests checks it).
import Configuration
import Flagship
import FlagshipConfiguration

func startFromTheEnvironment() throws {
    let settings = try FlagshipSettings(reading: ConfigReader(provider: EnvironmentVariablesProvider()))
    Flagship.sharedInstance.start(envId: settings.envId, apiKey: settings.apiKey,
                                  config: settings.configBuilder().build())
}
#endif
