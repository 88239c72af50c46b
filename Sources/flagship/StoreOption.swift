import ArgumentParser

/// What `--db` means for one command: the store it works on, said in its help, and whether it
/// takes a PostgreSQL store (`postgres://`) as well as a store file. One type per command, so
/// that each help says what is true of that command, and the refusal of a PostgreSQL URL names
/// the commands that take one (`PostgresURL.commandsTakingPostgres`).
protocol StoreOption {
    /// The command as typed after `flagship`: `db inspect`.
    static var command: String { get }
    static var takesPostgres: Bool { get }
    /// The help's sentence.
    static var text: String { get }
}

extension StoreOption {
    /// In a build without PostgreSQL support, the store file's part of the text only, and one
    /// line saying how to get a build that takes a URL: the help does not describe URLs the
    /// command would refuse.
    static var help: ArgumentHelp {
        guard takesPostgres, !PostgresURL.isBuiltIn else {
            return ArgumentHelp(text, valueName: takesPostgres ? "path|url" : "path")
        }
        let fileOnly = text.range(of: " or a PostgreSQL store").map { String(text[..<$0.lowerBound]) + "." } ?? text
        return ArgumentHelp(fileOnly + " (A postgres:// URL needs the Postgres trait: swift build --traits Postgres --product flagship.)",
                            valueName: "path")
    }
}

/// The sentence of a command's discussion that says what it does with a PostgreSQL store: empty
/// in a build without PostgreSQL support, where the command would refuse one.
func postgresDiscussion(_ sentence: String) -> String {
    PostgresURL.isBuiltIn ? " " + sentence : ""
}

/// The same for a paragraph of its own.
func postgresParagraph(_ paragraph: String) -> String {
    PostgresURL.isBuiltIn ? "\n\n" + paragraph : ""
}

/// Every command's `--db`.
enum StoreOptions {
    static var all: [any StoreOption.Type] {
        [
            MigrateStore.self, InspectStore.self, PruneStore.self, SalvageStore.self, VisitorsStore.self, HitsStore.self,
            WhyStore.self, ExportStore.self, FetchStore.self, SendHitStore.self, ReplayStore.self, DoctorStore.self,
        ]
    }

    /// How a PostgreSQL store is written, for the commands that take one.
    static let postgresForm = "postgres://user@host:port/database (the password from PGPASSWORD: one in the URL "
        + "can be read by any user of the machine in `ps`; TLS by ?sslmode=…&sslrootcert=… or PGSSLMODE, as libpq: "
        + "prefer by default, verify-full to check the server's certificate)"
    static let defaultFile = "<cache dir>/flagship-<envId>.sqlite"
}

enum ExportStore: StoreOption {
    static let command = "export"
    static let takesPostgres = true
    static let text = "The store to read, read-only: a store file (usually \(StoreOptions.defaultFile)) or a PostgreSQL store, "
        + StoreOptions.postgresForm + "."
}

enum MigrateStore: StoreOption {
    static let command = "db migrate"
    static let takesPostgres = false
    static let text = "The store file to create, or to bring up to date (a PostgreSQL store is migrated by the SDK that starts on it)."
}

enum InspectStore: StoreOption {
    static let command = "db inspect"
    static let takesPostgres = true
    static let text = "The store to inspect, read-only: a store file (usually \(StoreOptions.defaultFile)) or a PostgreSQL store, "
        + StoreOptions.postgresForm + "."
}

enum PruneStore: StoreOption {
    static let command = "db prune"
    static let takesPostgres = false
    static let text = "The store file to prune (usually \(StoreOptions.defaultFile))."
}

enum SalvageStore: StoreOption {
    static let command = "db salvage"
    static let takesPostgres = false
    static let text = "The store file that receives what --from still holds (created if missing)."
}

enum VisitorsStore: StoreOption {
    static let command = "visitors"
    static let takesPostgres = true
    static let text = "The store whose visitors to list, read-only: a store file or a PostgreSQL store, " + StoreOptions.postgresForm + "."
}

enum HitsStore: StoreOption {
    static let command = "hits"
    static let takesPostgres = true
    static let text = "The store whose unsent hits to list, read-only: a store file or a PostgreSQL store, " + StoreOptions.postgresForm + "."
}

enum WhyStore: StoreOption {
    static let command = "why"
    static let takesPostgres = true
    static let text = "The store whose decision history to read, read-only: a store file or a PostgreSQL store, "
        + StoreOptions.postgresForm + "."
}

enum FetchStore: StoreOption {
    static let command = "fetch"
    static let takesPostgres = false
    static let text = "The store file the SDK runs on (default: \(StoreOptions.defaultFile))."
}

enum SendHitStore: StoreOption {
    static let command = "send-hit"
    static let takesPostgres = false
    static let text = "The store file the SDK commits the hits to (default: \(StoreOptions.defaultFile))."
}

enum ReplayStore: StoreOption {
    static let command = "replay"
    static let takesPostgres = true
    static let text = "The store whose waiting hits to send: a store file (default: \(StoreOptions.defaultFile)) or a PostgreSQL store, "
        + StoreOptions.postgresForm + "."
}

enum DoctorStore: StoreOption {
    static let command = "doctor"
    static let takesPostgres = false
    static let text = "The store file to check (default: \(StoreOptions.defaultFile))."
}
