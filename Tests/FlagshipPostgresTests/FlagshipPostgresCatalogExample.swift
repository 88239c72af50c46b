#if Postgres
// The example of FlagshipPostgres's catalog (Sources/FlagshipPostgres/FlagshipPostgres.docc), verbatim:
// compiled here, by the build that compiles SwiftNIO for these tests (DocumentationSnippetTests checks it).
import Flagship
import FlagshipPostgres

func startOnTheFleetStore() async throws -> FlagshipPostgresStore {
    let store = try FlagshipPostgresStore(url: "postgres://flagship@db.internal:5432/flagship")
    _ = try await store.prepare()               // connects and migrates, or says why not
    Flagship.sharedInstance.start(envId: "env", apiKey: "key",
                                  config: FSConfigBuilder().withPostgresStore(store).build())
    return store                                // close it after Flagship.sharedInstance.close()
}
#endif
