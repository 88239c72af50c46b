/// One forward step of the schema: the contents of `Migrations/NNNN_name.sql`.
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}
