import ArgumentParser

/// `flagship-torture`: runs the SDK as a user's process would, and does to it what production
/// does: kills it at random points, then checks what the SDK promised still holds.
@main
struct TortureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flagship-torture",
        abstract: "Torture runs of the Flagship SDK against the local server.",
        subcommands: [CrashTortureCommand.self, TortureWorkerCommand.self]
    )
}
