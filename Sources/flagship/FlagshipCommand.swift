import ArgumentParser
import Flagship

/// `flagship`: look into and maintain the SDK's local store from a shell.
///
/// Named `FlagshipCLI` because the SDK module is already called `Flagship`.
@main
struct FlagshipCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flagship",
        abstract: "Inspect and maintain the Flagship SDK's local store, and run the SDK against it.",
        // The version the SDK sends to the servers (x-sdk-version): one source.
        version: SDKInfo.version,
        subcommands: [
            DBCommand.self, VisitorsCommand.self, HitsCommand.self, FetchCommand.self, SendHitCommand.self, ReplayCommand.self,
            EvalCommand.self, FlagsCommand.self, WhyCommand.self, ExportCommand.self, ServeCommand.self, DemoCommand.self, DoctorCommand.self,
        ]
    )

    /// ArgumentParser's `main`, with stdout flushed before a failure is written to stderr: when
    /// both go to one pipe or file, the `Error:` line comes after the lines it sums up.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            Output.flushStandardOutput()
            exit(withError: error)
        }
    }
}
