import Foundation
import PackagePlugin

/// Embeds `Migrations/*.sql` (at the package root) into the target it is applied to, as
/// `Migration.embedded`; for FlagshipPostgres, `Migrations/PostgreSQL/*.sql` as `Migration.postgres`.
/// Nothing reads them from disk at run time.
///
/// The tool is given the folder and lists it when it runs. The command's inputs are the folder
/// and the files this plugin saw: a file added there (the folder changes) or one of those edited
/// runs the tool again at the next build. SwiftPM runs this plugin again only when it plans the
/// build again (`Package.swift` or a target's list of files changed): until then, a file removed
/// fails the build as a missing input and a file added since is not watched for edits
/// (`touch Package.swift` re-plans). The tool rewrites its output only when the text changes, so
/// a build that runs it with nothing changed recompiles nothing.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let isPostgres = target.name == "FlagshipPostgres"
        let folder = isPostgres ? "Migrations/PostgreSQL" : "Migrations"
        let migrationsDirectory = context.package.directoryURL.appending(path: folder)
        // FlagshipPostgres's steps compile with its sources, under the package trait `Postgres`.
        let options = isPostgres ? ["--member", "postgres", "--import", "FlagshipStore", "--condition", "Postgres"] : []
        let sqlFiles = try FileManager.default
            .contentsOfDirectory(at: migrationsDirectory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(folder)/*.sql into \(target.name)",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [output.path] + options + [migrationsDirectory.path],
                inputFiles: [migrationsDirectory] + sqlFiles,
                outputFiles: [output]
            )
        ]
    }
}
