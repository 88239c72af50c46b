import ArgumentParser

/// `flagship db`: the store file itself.
struct DBCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Create, upgrade, inspect, prune or salvage a store file.",
        subcommands: [DBMigrate.self, DBInspect.self, DBPrune.self, DBSalvage.self]
    )
}
