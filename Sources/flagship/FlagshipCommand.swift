import ArgumentParser

/// `flagship`: look into and maintain the SDK's local store from a shell.
///
/// Named `FlagshipCLI` because the SDK module is already called `Flagship`.
@main
struct FlagshipCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flagship",
        abstract: "Inspect and maintain the Flagship SDK's local store, and run the SDK against it.",
        subcommands: [
            DBCommand.self, VisitorsCommand.self, HitsCommand.self, FetchCommand.self, SendHitCommand.self, ReplayCommand.self,
            EvalCommand.self, FlagsCommand.self, WhyCommand.self, ServeCommand.self, DemoCommand.self, DoctorCommand.self,
        ]
    )
}
