/// What reading a file gathers beside its campaigns: the warnings, and the context keys its rules read.
struct BucketingFileReader: Sendable {
    private(set) var warnings: [String] = []
    private(set) var contextKeys = ContextKeys()
    private(set) var readsVisitorId = false
    private var namedOperators: Set<String> = []
    /// The operator each warning about an unknown one names, by the warning's index.
    private var operatorWarnings: [Int: String] = [:]

    mutating func warn(_ warning: String) {
        warnings.append(warning)
    }

    /// One warning per unknown operator, however many rules use it.
    mutating func warnOnce(aboutOperator name: String, at location: String) {
        guard namedOperators.insert(name).inserted else { return }
        operatorWarnings[warnings.count] = name
        warn("unknown targeting operator \"\(name)\" (first at \(location)); rules with it never match")
    }

    /// Takes in the reader of the next campaigns of the same file, read apart: its warnings after
    /// these (an unknown operator named once, where the file first uses it), its context keys
    /// after these, in the order a reading in order gives them. Returns the slot each of its keys
    /// has here.
    mutating func append(_ next: BucketingFileReader) -> [Int] {
        for (index, warning) in next.warnings.enumerated() {
            if let name = next.operatorWarnings[index] {
                guard namedOperators.insert(name).inserted else { continue }
                operatorWarnings[warnings.count] = name
            }
            warn(warning)
        }
        readsVisitorId = readsVisitorId || next.readsVisitorId
        return next.contextKeys.names.map { contextKeys.slot(for: $0) }
    }

    mutating func subject(forKey key: String) -> TargetingSubject {
        if key == "fs_users" {
            readsVisitorId = true
            return .visitorId
        }
        return .context(slot: contextKeys.slot(for: key))
    }
}
