/// A value as SQLite stores it. Statements only ever receive data as bound values of this type.
package enum SQLiteValue: Sendable, Equatable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    package var int64: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    package var double: Double? {
        switch self {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    package var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    package var isNull: Bool { self == .null }

    /// How the value reads in an error message: its type, never its content (which may be personal data).
    var typeName: String {
        switch self {
        case .null: return "NULL"
        case .integer: return "an INTEGER"
        case .real: return "a REAL"
        case .text: return "TEXT"
        case .blob: return "a BLOB"
        }
    }
}

extension SQLiteValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    package init(stringLiteral value: String) { self = .text(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue {
    package init(_ value: String?) { self = value.map(SQLiteValue.text) ?? .null }
    package init(_ value: Int64?) { self = value.map(SQLiteValue.integer) ?? .null }
    package init(_ value: Int) { self = .integer(Int64(value)) }
    package init(_ value: Bool) { self = .integer(value ? 1 : 0) }
}

/// One result row. Typed accessors throw `StoreError.unexpectedValue` instead of guessing.
package struct Row: Sendable {
    package let values: [SQLiteValue]
    let columnNames: [String]

    package subscript(index: Int) -> SQLiteValue { values[index] }

    package func text(_ index: Int) throws -> String {
        guard let value = values[index].text else { throw mismatch(index) }
        return value
    }

    package func optionalText(_ index: Int) throws -> String? {
        if values[index].isNull { return nil }
        return try text(index)
    }

    package func int64(_ index: Int) throws -> Int64 {
        guard let value = values[index].int64 else { throw mismatch(index) }
        return value
    }

    package func optionalInt64(_ index: Int) throws -> Int64? {
        if values[index].isNull { return nil }
        return try int64(index)
    }

    package func int(_ index: Int) throws -> Int { Int(try int64(index)) }

    package func bool(_ index: Int) throws -> Bool { try int64(index) != 0 }

    private func mismatch(_ index: Int) -> StoreError {
        .unexpectedValue(column: columnNames[index], found: values[index].typeName)
    }
}
