#if Postgres
// The example of the article "Fleets on PostgreSQL" (Sources/Flagship/Flagship.docc/Fleets.md), verbatim:
// compiled here, by the build that compiles SwiftNIO for these tests (DocumentationSnippetTests checks it).
import Flagship
import FlagshipPostgres

func serve() async throws {
    let store = try FlagshipPostgresStore(url: "postgres://flagship@db.internal:5432/flagship")   // PGPASSWORD, or in the URL
    let version = try await store.prepare()     // connects and migrates, or throws FlagshipPostgresError
    print("fleet store at schema version", version)
    Flagship.sharedInstance.start(envId: "env", apiKey: "key",
                                  config: FSConfigBuilder().withPostgresStore(store).build())
    // ... serve requests ...
    await Flagship.sharedInstance.close()
    await store.close()
}
#endif
