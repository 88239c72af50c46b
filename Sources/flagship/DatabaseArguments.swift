import ArgumentParser
#if Postgres
import FlagshipPostgres
#endif
import FlagshipStore
import Foundation

/// `--db`: the store a command works on; a `postgres://` URL for the commands whose `Store`
/// takes one. `Store` says what `--db` means for the command, in its help.
struct DatabaseArguments<Store: StoreOption>: ParsableArguments {
    @Option(name: .customLong("db"), help: Store.help)
    var path: String

    /// The file as an absolute path, which is how every message names it.
    var url: URL { URL(fileURLWithPath: path).standardizedFileURL }

    func validate() throws {
        try PostgresURL.requireSupport(path)
    }

    #if Postgres
    /// Where the PostgreSQL store is, when `--db` is a `postgres://` URL; `nil` for a file.
    func postgresLocation() throws -> FlagshipPostgresStore.Location? {
        try PostgresURL.location(path)
    }
    #endif

    /// For a command that works on store files only: refuses a PostgreSQL URL, saying so.
    func requireStoreFile() throws {
        try PostgresURL.refuse(path, command: Store.command)
    }

    /// Opens the existing file read-only: nothing in it is changed, and a file that is not a
    /// Flagship store is refused. A store the SDK would refuse although this build can read it
    /// (its schema steps are not this build's) is opened with a warning saying so.
    func openForInspection() throws -> FlagshipDatabase {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CommandFailure("no store at \(url.path) (`flagship db migrate --db \(path)` creates one)")
        }
        guard !isDirectory.boolValue else {
            throw CommandFailure("\(url.path) is a directory, not a store file")
        }
        let store = try FlagshipDatabase.openForInspection(at: url)
        if let permissions = FilePermissions.openToOthers(atPath: url.path) {
            Output.warn("other users can read or change \(url.path) (mode \(FilePermissions.octal(permissions))), which holds visitor data: chmod 600 it")
        }
        do {
            try store.database.withConnection { try Migrator().checkHistory($0, path: url.path) }
        } catch {
            Output.warn("the SDK will not use this store (it runs with an in-memory cache instead): \(error)")
        }
        return store
    }
}

/// `--env-id` of the commands that read a store, for a PostgreSQL one: its tables hold the rows
/// of several environments.
struct EnvironmentArguments: ParsableArguments {
    /// Shown in a build with PostgreSQL support only: elsewhere a store file is all `--db` takes.
    @Option(help: ArgumentHelp(
        "With a PostgreSQL --db: the environment whose rows to read (a store file holds one environment).",
        valueName: "env-id", visibility: PostgresURL.isBuiltIn ? .default : .hidden))
    var envId: String?

    /// `--env-id` with a store file: said to be ignored.
    func warnIfGivenForAFile() {
        if envId != nil { Output.warn("--env-id is ignored: a store file holds one environment") }
    }
}

/// `--db` and the SDK's `--db` as a PostgreSQL URL: `postgres://` or `postgresql://`.
enum PostgresURL {
    static func isPostgres(_ text: String) -> Bool {
        let lowercased = text.lowercased()
        return lowercased.hasPrefix("postgres://") || lowercased.hasPrefix("postgresql://")
    }

    /// Whether this build reads and writes PostgreSQL stores: built with the package trait
    /// `Postgres`, which brings FlagshipPostgres (and SwiftNIO); the default build has neither.
    #if Postgres
    static let isBuiltIn = true
    #else
    static let isBuiltIn = false
    #endif

    /// What a build without PostgreSQL support answers to a `postgres://` URL: how to get one.
    static let notBuiltIn = "PostgreSQL support is not built in: build flagship with the Postgres trait "
        + "(swift build --traits Postgres --product flagship)"

    /// Refuses a PostgreSQL URL when this build cannot open one, saying how to get a build that can.
    static func requireSupport(_ text: String?) throws {
        guard !isBuiltIn, let text, isPostgres(text) else { return }
        throw CommandFailure("--db: \(notBuiltIn)")
    }

    #if Postgres
    /// The location `text` names, or `nil` for a path. The URL as given is never in a message:
    /// it may hold the password, which draws a warning (once) when `warnsOfPassword`.
    static func location(_ text: String, warnsOfPassword: Bool = true) throws -> FlagshipPostgresStore.Location? {
        guard isPostgres(text) else { return nil }
        // Location parses lowercase schemes only.
        let scheme = text.prefix { $0 != ":" }
        let location: FlagshipPostgresStore.Location
        do {
            location = try FlagshipPostgresStore.Location(url: scheme.lowercased() + text.dropFirst(scheme.count))
        } catch {
            throw CommandFailure("--db: \(error)")
        }
        if warnsOfPassword, URLComponents(string: text)?.password != nil,
           warnedOfPassword.setFirst() {
            Output.warn("--db holds a password: any user of this machine can read it in `ps`. "
                + "Leave it out of the URL and set PGPASSWORD instead")
        }
        return location
    }

    /// The password warning is printed once per process.
    private static let warnedOfPassword = Locked(false)
    #endif

    /// Refuses a PostgreSQL URL for a command that works on store files only.
    static func refuse(_ text: String, command: String) throws {
        guard isPostgres(text) else { return }
        #if Postgres
        // Refused whatever it holds: its password is not worth a warning of its own.
        let store = (try? location(text, warnsOfPassword: false)).map { "\($0)" } ?? "a PostgreSQL store"
        #else
        let store = "a PostgreSQL store"
        #endif
        throw CommandFailure("`flagship \(command)` needs a SQLite store file, not \(store): with PostgreSQL, "
            + "\(commandsTakingPostgres) take --db postgres://...")
    }

    /// `` `db inspect`, `visitors`, `hits`, `why`, `export` and `replay` ``: the commands whose `--db` takes a PostgreSQL store.
    static var commandsTakingPostgres: String {
        let names = StoreOptions.all.filter { $0.takesPostgres }.map { "`\($0.command)`" }
        guard let last = names.last else { return "no command" }
        return names.count == 1 ? last : names.dropLast().joined(separator: ", ") + " and " + last
    }
}
