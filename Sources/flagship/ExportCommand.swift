import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship export`: everything a store holds for one visitor, as JSON (an access request).
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print, as JSON, everything the store holds for one visitor.",
        discussion: """
            For an access request: the visitor's cached document (its context, campaigns and \
            assignment history), its recorded decisions with the bucketing file version of each, \
            and its hits that wait to be sent. The store is opened read-only, in one snapshot. A \
            visitor the store holds nothing for prints its id with an empty answer (exit 0); rows \
            of the visitor that cannot be read are skipped and counted (unreadableRows), with a \
            warning; rows with a value the SDK would not have written are shown as stored, marked \
            `damaged` and counted (damagedRows), with a warning.
            """ + postgresDiscussion("With --db postgres://..., the visitor of the environment --env-id names.")
    )

    @OptionGroup var database: DatabaseArguments<ExportStore>
    @OptionGroup var environment: EnvironmentArguments

    @Option(name: .customLong("visitor-id"), help: "The visitor whose data to print.")
    var visitorId: String

    func validate() throws {
        guard !visitorId.isEmpty else { throw ValidationError("--visitor-id must not be empty") }
    }

    private func read() async throws -> VisitorDataRecords {
        #if Postgres
        if let location = try database.postgresLocation() {
            let (envId, visitorId) = (environment.envId, visitorId)
            return try await PostgresReading.read(location) { inspection in
                let envId = try await PostgresReading.environment(envId, in: inspection, location: location)
                return try await inspection.visitorData(envId: envId, visitorId: visitorId)
            }
        }
        #endif
        environment.warnIfGivenForAFile()
        let store = try database.openForInspection()
        defer { store.close() }
        let visitorId = visitorId
        return try await store.read { try $0.visitorData(visitorId: visitorId) }
    }

    func run() async throws {
        let data = FSVisitorData(try await read())
        if data.unreadableRows > 0 {
            Output.warn("\(data.unreadableRows) row(s) of this visitor could not be read and are not in the answer (`flagship db inspect` says more)")
        }
        if data.damagedRows > 0 {
            Output.warn("\(data.damagedRows) row(s) of this visitor hold a value the SDK would not have written (a hand edit, damage): in the answer as stored, each with `damaged` saying what")
        }
        print(String(decoding: data.jsonData(), as: UTF8.self))
    }
}
