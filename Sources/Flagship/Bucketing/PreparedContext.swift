/// The context keys a file's rules read, each given a slot: a decision looks each key up once,
/// however many rules read it, and rules then read their slot.
struct ContextKeys: Sendable {
    private(set) var names: [String] = []
    private var slots: [String: Int] = [:]

    var count: Int { names.count }

    init() {}

    /// The keys `names` gives their slots in order; `nil` when one is named twice.
    init?(names: [String]) {
        for name in names {
            guard slots.updateValue(self.names.count, forKey: name) == nil else { return nil }
            self.names.append(name)
        }
    }

    func slot(of key: String) -> Int? {
        slots[key]
    }

    mutating func slot(for key: String) -> Int {
        if let slot = slots[key] { return slot }
        names.append(key)
        slots[key] = names.count - 1
        return names.count - 1
    }
}

/// A context value as rules compare it.
enum PreparedValue: Sendable {
    case absent
    /// Lower-cased, stored contiguously.
    case text(String)
    case number(Double)
    case bool(Bool)
    /// `null`, a list, an object: present, but no operand compares with it.
    case other

    init(_ json: FSJSONValue) {
        switch json {
        case .string(let string): self = .text(UTF8Bytes.lowercased(string))
        case .int(let number): self = .number(Double(number))
        case .double(let number): self = .number(number)
        case .bool(let bool): self = .bool(bool)
        case .null, .array, .object: self = .other
        }
    }

    var isPresent: Bool {
        if case .absent = self { return false }
        return true
    }
}

/// A visitor as a file's rules read it, made once per decision: each key some rule reads is
/// looked up once, and its string lower-cased once (no copy when it has nothing to lower).
struct PreparedContext {
    private let visitorId: PreparedValue
    private let values: ContiguousArray<PreparedValue>

    init(visitorId: String, context: [String: FSJSONValue], keys: ContextKeys, readsVisitorId: Bool) {
        self.visitorId = readsVisitorId ? .text(UTF8Bytes.lowercased(visitorId)) : .absent
        var values = ContiguousArray(repeating: PreparedValue.absent, count: keys.count)
        // The fewer lookups: the file's keys in the context, or the context's keys in the file's.
        if keys.count <= context.count {
            for (slot, key) in keys.names.enumerated() {
                if let value = context[key] { values[slot] = PreparedValue(value) }
            }
        } else {
            for (key, value) in context {
                if let slot = keys.slot(of: key) { values[slot] = PreparedValue(value) }
            }
        }
        self.values = values
    }

    subscript(subject: TargetingSubject) -> PreparedValue {
        switch subject {
        case .visitorId: return visitorId
        case .context(let slot): return values[slot]
        }
    }
}
