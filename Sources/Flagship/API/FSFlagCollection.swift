import Foundation

/// A visitor's flags by key, as `getFlags()` gives them.
public struct FSFlagCollection: Sendable, Sequence {
    private var flags: [String: FSFlag]
    private let visitor: FSVisitor

    init(flags: [String: FSFlag], visitor: FSVisitor) {
        self.flags = flags
        self.visitor = visitor
    }

    /// The flag of that key; one that does not exist reads as its default. Setting puts a flag
    /// in this collection under that key, as in a dictionary; the visitor's flags are unchanged.
    public subscript(key: String) -> FSFlag {
        get { flags[key] ?? FSFlag(key: key, visitor: visitor) }
        set { flags[key] = newValue }
    }

    /// The keys, sorted; an empty array when there is no flag.
    public func keys() -> [String] { flags.keys.sorted() }

    /// The metadata of each flag, in key order.
    public func metadatas() -> [FSFlagMetadata] { keys().compactMap { flags[$0]?.metadata() } }

    /// A JSON array of each flag's metadata with its key; `""` when there is no flag.
    public func toJson() -> String {
        guard !flags.isEmpty else { return "" }
        return FSJSONValue.array(keys().compactMap { key -> FSJSONValue? in
            guard case .object(var object)? = flags[key]?.metadata().jsonValue else { return nil }
            object["key"] = .string(key)
            return .object(object)
        }).jsonString()
    }

    /// The flags for which `isIncluded` (given each key and flag) returns `true`, as a collection.
    public func filter(_ isIncluded: (String, FSFlag) throws -> Bool) rethrows -> FSFlagCollection {
        FSFlagCollection(flags: try flags.filter { try isIncluded($0.key, $0.value) }, visitor: visitor)
    }

    /// The (key, flag) pairs, in no particular order (`keys()` is sorted).
    public func makeIterator() -> DictionaryIterator<String, FSFlag> { flags.makeIterator() }

    /// Whether the collection holds no flag.
    public var isEmpty: Bool { flags.isEmpty }

    /// How many flags the collection holds.
    public var count: Int { flags.count }

    /// Reports the exposure of every flag in the collection.
    public func exposeAll() {
        for flag in flags.values { flag.visitorExposed() }
    }
}
