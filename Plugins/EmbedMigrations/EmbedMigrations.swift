import Foundation
import PackagePlugin

/// Embeds `Migrations/*.sql` (at the package root) into the target it is applied to, as
/// `Migration.embedded`; for FlagshipPostgres, `Migrations/PostgreSQL/*.sql` as `Migration.postgres`.
///
/// The migrations are listed anew at every build, so a new file is picked up by the next build,
/// and nothing reads them from disk at run time.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let isPostgres = target.name == "FlagshipPostgres"
        let migrationsDirectory = context.package.directoryURL.appending(path: isPostgres ? "Migrations/PostgreSQL" : "Migrations")
        let options = isPostgres ? ["--member", "postgres", "--import", "FlagshipStore"] : []
        let sqlFiles = try FileManager.default
            .contentsOfDirectory(at: migrationsDirectory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(sqlFiles.count) migration(s) into \(target.name)",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [output.path] + options + sqlFiles.map(\.path),
                inputFiles: [migrationsDirectory] + sqlFiles,
                outputFiles: [output]
            )
        ]
    }
}
