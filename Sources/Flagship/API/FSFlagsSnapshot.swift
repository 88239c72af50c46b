import Foundation

/// Every flag of a visitor, read at once: the values a server renders a page with, consistent with
/// each other whatever a fetch does meanwhile (``FSVisitor/flagsSnapshot(exposure:)``).
public struct FSFlagsSnapshot: Sendable, Equatable {
    /// One flag: its key, value and the campaign that gave it.
    public struct Flag: Sendable, Equatable {
        /// The flag's key.
        public let key: String
        /// The value as JSON holds it (`nil` for a flag whose value is `null`).
        public let rawValue: JSONValueSnapshot
        /// The campaign and variation behind the flag.
        public let metadata: FSFlagMetadata

        /// The value as `T`, as ``FSFlag/value(defaultValue:visitorExposed:)`` converts it;
        /// `defaultValue` when it is `null` or of another type. Reports nothing.
        public func value<T>(defaultValue: T) -> T {
            FlagValue.convert(rawValue.value, to: T.self) ?? defaultValue
        }
    }

    /// Whose flags these are.
    public let visitorId: String
    /// The flags, by key order.
    public let flags: [Flag]
    /// The visitor's fetch status when the snapshot was taken.
    public let fetchStatus: FSFetchStatus
    /// Whose job reporting the exposures is.
    public let exposure: FSSnapshotExposure

    /// The flag of that key, if the visitor has it.
    public subscript(key: String) -> Flag? {
        flags.first { $0.key == key }
    }

    /// The value of flag `key` as `T`; `defaultValue` when the visitor has no such flag, or its
    /// value is `null` or of another type. Reports nothing: the snapshot's exposure policy did.
    public func value<T>(_ key: String, defaultValue: T) -> T {
        self[key]?.value(defaultValue: defaultValue) ?? defaultValue
    }

    /// The flags as Flagship's JavaScript and React SDKs take them for a page rendered on the
    /// server (their `initialFlagsData`, what their `getFlags().toJSON()` gives): an array of
    /// `{key, campaignId, campaignName, variationGroupId, variationGroupName, variationId,
    /// variationName, isReference, campaignType, slug, hex}`, `hex` being the hexadecimal of
    /// `{"v": value}` as JSON text. The text is ASCII (other characters as `\u` escapes), which
    /// is what their decoder reads back exactly, two hex digits a character.
    ///
    /// ```swift
    /// let json = String(decoding: snapshot.initialFlagsData(), as: UTF8.self)
    /// // <script>Flagship.newVisitor({visitorId, initialFlagsData: JSON.parse(json)})</script>
    /// ```
    public func initialFlagsData() -> Data {
        let entries = flags.map { flag -> FSJSONValue in
            var wrapped = ""
            FSJSONValue.object(["v": flag.rawValue.value]).write(into: &wrapped)
            let hex = Self.asciiOnly(wrapped).utf8.map { byte in
                let digits = String(byte, radix: 16)
                return digits.count == 1 ? "0" + digits : digits
            }.joined()
            let metadata = flag.metadata
            return .object([
                "key": .string(flag.key), "campaignId": .string(metadata.campaignId), "campaignName": .string(metadata.campaignName),
                "variationGroupId": .string(metadata.variationGroupId), "variationGroupName": .string(metadata.variationGroupName),
                "variationId": .string(metadata.variationId), "variationName": .string(metadata.variationName),
                "isReference": .bool(metadata.isReference), "campaignType": .string(metadata.campaignType),
                "slug": metadata.slug.isEmpty ? .null : .string(metadata.slug), "hex": .string(hex),
            ])
        }
        var text = ""
        FSJSONValue.array(entries).write(into: &text)
        return Data(text.utf8)
    }

    /// JSON text with every character outside ASCII written as `\uXXXX` (two for one beyond the
    /// basic plane): outside strings JSON has none, so only strings change, and mean the same.
    static func asciiOnly(_ json: String) -> String {
        guard json.utf8.contains(where: { $0 >= 0x80 }) else { return json }
        var text = ""
        text.reserveCapacity(json.utf8.count + 16)
        for unit in json.utf16 {
            if unit < 0x80 {
                text.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            } else {
                let digits = String(unit, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            }
        }
        return text
    }
}

/// A flag value as JSON holds it, in a snapshot: compared and carried as is, read through
/// ``FSFlagsSnapshot/Flag/value(defaultValue:)``.
public struct JSONValueSnapshot: Sendable, Equatable, CustomStringConvertible {
    let value: FSJSONValue

    /// The value as Foundation gives JSON (`String`, `Bool`, `Int`, `Double`, arrays,
    /// dictionaries); `nil` for `null`.
    public var foundationValue: Any? { value.isNull ? nil : value.foundationValue }

    /// The value as JSON text.
    public var description: String { value.jsonString() }
}

/// Who reports the exposure of the flags of a ``FSFlagsSnapshot``.
public enum FSSnapshotExposure: String, Sendable {
    /// The server: each flag's exposure is reported when the snapshot is taken, as a read of
    /// each would report it (once per variation, deduplicated as ``FSDeduplication`` says).
    /// For a page that shows every flag it was given.
    case now
    /// Nobody yet: the page's client SDK, given ``FSFlagsSnapshot/initialFlagsData()``,
    /// reports each flag when the page reads it; or the server later, through
    /// ``FSFlag/visitorExposed()``.
    case byTheClient
}

extension FSVisitor {
    /// Every flag the visitor has, read in one pass under the visitor's lock, and their
    /// exposure reported now or left to the page (`exposure`): the one read a page rendered on
    /// the server needs. Hooks (``FlagshipHook``) are not run: this is not an evaluation of one
    /// flag. In panic mode the snapshot holds no flag.
    public func flagsSnapshot(exposure: FSSnapshotExposure) -> FSFlagsSnapshot {
        let panic = sdkStatus == .SDK_PANIC
        let (visitorId, status, entries) = withState { state -> (String, FSFetchStatus, [FlagEntry]) in
            let entries = panic || state.fetchStatus == .PANIC ? [] : state.flags.values.sorted { $0.key < $1.key }
            return (state.visitorId, state.fetchStatus, entries)
        }
        if exposure == .now {
            for entry in entries where !entry.value.isNull {
                expose(entry, defaultValue: { .null })
            }
        }
        return FSFlagsSnapshot(visitorId: visitorId,
                               flags: entries.map { FSFlagsSnapshot.Flag(key: $0.key, rawValue: JSONValueSnapshot(value: $0.value), metadata: $0.metadata) },
                               fetchStatus: status, exposure: exposure)
    }
}
