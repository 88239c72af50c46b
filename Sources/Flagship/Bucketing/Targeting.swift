/// A variation group's targeting, read once: its groups are OR'ed, the rules of a group AND'ed.
/// No group (a missing `targeting`, an empty list, groups without rules) matches nothing.
struct Targeting: Sendable {
    /// Each holds one rule at least: a group without any is dropped when the file is read.
    let groups: [[TargetingRule]]
    /// Each rule of `groups` as the file wrote it, at the same indices: for explaining a decision.
    let written: [[WrittenRule]]

    /// A rule as the file wrote it.
    struct WrittenRule: Sendable {
        /// `nil`: the rule had none.
        var key: String?
        var operatorName: String?
        var value: FSJSONValue?
    }

    static let nobody = Targeting(groups: [], written: [])

    func matches(_ visitor: PreparedContext) -> Bool {
        groups.contains { rules in rules.allSatisfy { $0.isSatisfied(by: visitor) } }
    }
}

/// The operators of a targeting rule, named as in the file.
enum TargetingOperator: String, Sendable, CaseIterable {
    case equals = "EQUALS"
    case notEquals = "NOT_EQUALS"
    case contains = "CONTAINS"
    case notContains = "NOT_CONTAINS"
    case startsWith = "STARTS_WITH"
    case endsWith = "ENDS_WITH"
    case greaterThan = "GREATER_THAN"
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    case lowerThan = "LOWER_THAN"
    case lowerThanOrEquals = "LOWER_THAN_OR_EQUALS"
    case exists = "EXISTS"
    case notExists = "NOT_EXISTS"
    case semverEquals = "SEMVER_EQUALS"
    case semverNotEquals = "SEMVER_NOT_EQUALS"
    case semverGreaterThan = "SEMVER_GREATER_THAN"
    case semverLowerThan = "SEMVER_LOWER_THAN"
    case semverGreaterThanOrEquals = "SEMVER_GREATER_THAN_OR_EQUALS"
    case semverLowerThanOrEquals = "SEMVER_LOWER_THAN_OR_EQUALS"

    var comparesVersions: Bool {
        switch self {
        case .semverEquals, .semverNotEquals, .semverGreaterThan, .semverLowerThan,
             .semverGreaterThanOrEquals, .semverLowerThanOrEquals:
            return true
        default:
            return false
        }
    }

    /// The outcome of an ordering operator (plain or semver) for `order` (negative, 0, positive
    /// as the visitor's value sorts before, with or after the rule's); false for the others.
    func accepts(order: Int) -> Bool {
        switch self {
        case .equals, .semverEquals: return order == 0
        case .notEquals, .semverNotEquals: return order != 0
        case .greaterThan, .semverGreaterThan: return order > 0
        case .greaterThanOrEquals, .semverGreaterThanOrEquals: return order >= 0
        case .lowerThan, .semverLowerThan: return order < 0
        case .lowerThanOrEquals, .semverLowerThanOrEquals: return order <= 0
        case .contains, .notContains, .startsWith, .endsWith, .exists, .notExists: return false
        }
    }
}

/// A rule's `value`, converted for its operator when the file is read.
enum TargetingOperand: Sendable {
    /// Lower-cased, stored contiguously.
    case text(String)
    /// The value of a `SEMVER_*` rule, lower-cased: `text` holds the bytes `version` points into.
    case version(SemanticVersion, text: String)
    case number(Double)
    case bool(Bool)
    case list([TargetingOperand])
    /// `null`, an object, a list inside a list, an invalid version: no visitor's value compares with it.
    case unusable
}

/// Where a rule reads the visitor's value.
enum TargetingSubject: Sendable, Equatable {
    /// `fs_users`: the visitor id.
    case visitorId
    /// Any other key: the context, at the key's slot in ``ContextKeys``.
    case context(slot: Int)
}

/// One targeting rule, read once into what its evaluation needs.
enum TargetingRule: Sendable {
    /// `fs_all_users`.
    case always
    /// A rule this SDK cannot evaluate (no key, no operator, an unknown operator).
    case never
    /// `EXISTS` (`present` true) or `NOT_EXISTS`, a `false` value having inverted it.
    case presence(TargetingSubject, present: Bool)
    case comparison(TargetingSubject, TargetingOperator, TargetingOperand)

    func isSatisfied(by visitor: PreparedContext) -> Bool {
        switch self {
        case .always:
            return true
        case .never:
            return false
        case .presence(let subject, let present):
            return visitor[subject].isPresent == present
        case .comparison(let subject, let op, let operand):
            let value = visitor[subject]
            guard value.isPresent else { return false }
            guard case .list(let elements) = operand else {
                return Self.compare(value, op, operand)
            }
            switch op.listMatch {
            case .any?: return elements.contains { Self.compare(value, op, $0) }
            case .every?: return elements.allSatisfy { Self.compare(value, op, $0) }
            case nil: return false
            }
        }
    }

    /// One value against one operand, seen where its text lies (`TargetingOperandView`).
    private static func compare(_ value: PreparedValue, _ op: TargetingOperator, _ operand: TargetingOperand) -> Bool {
        switch operand {
        case .text(let target): return UTF8Bytes.with(target) { value.compares(op, .text($0)) }
        case .version(let target, let text): return UTF8Bytes.with(text) { value.compares(op, .version(target, $0)) }
        case .number(let target): return value.compares(op, .number(target))
        case .bool(let target): return value.compares(op, .bool(target))
        case .list, .unusable: return false
        }
    }
}

/// A rule's operand as a comparison reads it, its text where it lies: a rule's string read from
/// the file, or the bytes of the store's compiled form (`CompiledTargeting`), so that both are
/// compared by one function. A list gives its count (its elements follow in the compiled form).
enum TargetingOperandView {
    case text(UnsafeBufferPointer<UInt8>)
    case version(SemanticVersion, UnsafeBufferPointer<UInt8>)
    case number(Double)
    case bool(Bool)
    case list(count: Int)
    case unusable
}

extension PreparedValue {
    /// This value against one operand: false unless their kinds agree and `op` applies to that kind.
    func compares(_ op: TargetingOperator, _ operand: TargetingOperandView) -> Bool {
        switch (self, operand) {
        case (.text(let text), .text(let target)):
            return UTF8Bytes.with(text) { op.compares(text: $0, with: target) }
        case (.text(let text), .version(let target, let targetText)):
            return UTF8Bytes.with(text) { op.compares(version: $0, with: target, in: targetText) }
        case (.number(let number), .number(let target)):
            return op.compares(number: number, with: target)
        case (.bool(let bool), .bool(let target)):
            return op.compares(bool: bool, with: target)
        default:
            return false
        }
    }
}

/// How a rule's operator reads each kind of operand: what the rules read from the file and the
/// rules the store's compiled form evaluates in place (`CompiledTargeting`) both call, so that
/// both decide alike.
extension TargetingOperator {
    /// How a list operand's elements combine: any one of them for `EQUALS` and `CONTAINS`, every
    /// one for their negations; `nil` (the rule is false) for the other operators.
    enum ListMatch { case any, every }

    var listMatch: ListMatch? {
        switch self {
        case .equals, .contains: return .any
        case .notEquals, .notContains: return .every
        default: return nil
        }
    }

    /// A visitor's text (lower-cased) against a rule's text (lower-cased).
    func compares(text: UnsafeBufferPointer<UInt8>, with target: UnsafeBufferPointer<UInt8>) -> Bool {
        switch self {
        case .contains: return UTF8Bytes.contains(text, target)
        case .notContains: return !UTF8Bytes.contains(text, target)
        case .startsWith: return UTF8Bytes.hasPrefix(text, target)
        case .endsWith: return UTF8Bytes.hasSuffix(text, target)
        case .equals: return UTF8Bytes.equal(text, target)
        case .notEquals: return !UTF8Bytes.equal(text, target)
        default: return accepts(order: UTF8Bytes.compare(text, target))
        }
    }

    /// A visitor's text against a rule's version `target`, read from `targetText`: false when the
    /// text is no version.
    func compares(version text: UnsafeBufferPointer<UInt8>, with target: SemanticVersion, in targetText: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let version = SemanticVersion(text) else { return false }
        return accepts(order: SemanticVersion.compare(version, in: text, target, in: targetText))
    }

    func compares(number: Double, with target: Double) -> Bool {
        accepts(order: number < target ? -1 : (number == target ? 0 : 1))
    }

    func compares(bool: Bool, with target: Bool) -> Bool {
        switch self {
        case .equals: return bool == target
        case .notEquals: return bool != target
        default: return false
        }
    }
}

// MARK: - Reading rules from the file

extension Targeting {
    /// Reads a variation group's `targeting`; what cannot be used matches nothing and is noted.
    init(reading json: FSJSONValue?, at location: String, with reader: inout BucketingFileReader) {
        guard let json, !json.isNull else {
            self = .nobody
            return
        }
        guard case .object = json else {
            reader.warn("\(location): \"targeting\" is not an object; the group targets nobody")
            self = .nobody
            return
        }
        let entries: [FSJSONValue]
        switch json["targetingGroups"] {
        case nil, .null?:
            entries = []
        case .array(let list)?:
            entries = list
        case .some:
            reader.warn("\(location): \"targetingGroups\" is not a list; the group targets nobody")
            entries = []
        }
        var groups: [[TargetingRule]] = []
        var written: [[WrittenRule]] = []
        for (index, entry) in entries.enumerated() {
            let groupLocation = "\(location), targeting group #\(index + 1)"
            let rules: [FSJSONValue]
            switch entry["targetings"] {
            case .array(let list)?:
                rules = list
            case nil, .null?:
                if entry.objectValue == nil { reader.warn("\(groupLocation) is not an object; it matches nobody") }
                continue
            case .some:
                reader.warn("\(groupLocation): \"targetings\" is not a list; it matches nobody")
                continue
            }
            let parsed = rules.enumerated().map { index, rule in
                TargetingRule(reading: rule, at: "\(groupLocation), rule #\(index + 1)", with: &reader)
            }
            if !parsed.isEmpty {
                groups.append(parsed)
                written.append(rules.map { WrittenRule(key: $0["key"]?.stringValue, operatorName: $0["operator"]?.stringValue,
                                                       value: $0["value"]) })
            }
        }
        self.init(groups: groups, written: written)
    }
}

extension TargetingRule {
    init(reading json: FSJSONValue, at location: String, with reader: inout BucketingFileReader) {
        guard case .object = json else {
            reader.warn("\(location) is not an object; it never matches")
            self = .never
            return
        }
        self.init(key: json["key"]?.stringValue, operatorName: json["operator"]?.stringValue, value: json["value"],
                  at: location, with: &reader)
    }

    /// A rule from its three members as a rule object holds them (`nil`: absent, or for `key`
    /// and `operator` not a string): what the JSON's reading and the store's compiled form both
    /// make, so that both give the same rule, context slots and warnings.
    init(key: String?, operatorName: String?, value: FSJSONValue?, at location: String, with reader: inout BucketingFileReader) {
        guard let key else {
            reader.warn("\(location) has no \"key\"; it never matches")
            self = .never
            return
        }
        if key == "fs_all_users" {
            self = .always
            return
        }
        guard let name = operatorName else {
            reader.warn("\(location) (key \"\(key)\") has no \"operator\"; it never matches")
            self = .never
            return
        }
        guard let op = TargetingOperator(rawValue: name) else {
            reader.warnOnce(aboutOperator: name, at: location)
            self = .never
            return
        }
        let subject = reader.subject(forKey: key)
        switch op {
        case .exists, .notExists:
            // A `false` value inverts the rule, as the Decision API does; any other is ignored.
            self = .presence(subject, present: (op == .exists) != (value == .bool(false)))
        default:
            if value == nil {
                reader.warn("\(location) (key \"\(key)\", \(name)) has no \"value\"; it never matches")
            }
            self = .comparison(subject, op, TargetingOperand(value ?? .null, for: op))
        }
    }
}

extension TargetingOperand {
    /// `json` for `op`: strings lower-cased, numbers as `Double`, a `SEMVER_*` string as a version
    /// (anything else for those operators is unusable: they compare strings only).
    init(_ json: FSJSONValue, for op: TargetingOperator, nested: Bool = false) {
        switch json {
        case .string(let string):
            let text = UTF8Bytes.lowercased(string)
            if op.comparesVersions {
                let version = UTF8Bytes.with(text) { SemanticVersion($0) }
                self = version.map { .version($0, text: text) } ?? .unusable
            } else {
                self = .text(text)
            }
        case _ where op.comparesVersions:
            self = .unusable
        case .int(let number):
            self = .number(Double(number))
        case .double(let number):
            self = .number(number)
        case .bool(let bool):
            self = .bool(bool)
        case .array(let elements) where !nested:
            self = .list(elements.map { TargetingOperand($0, for: op, nested: true) })
        case .null, .array, .object:
            self = .unusable
        }
    }
}
