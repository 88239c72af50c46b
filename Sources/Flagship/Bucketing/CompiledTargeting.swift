/// A variation group's targeting in the store's compiled form (`CompiledBucketingFile`): the rules
/// as the engine holds them (`TargetingRule`: subjects as context slots, operators as codes,
/// strings lower-cased, numbers as doubles), laid out so that a decision evaluates them where they
/// lie in the blob, building nothing, and skips what it does not need by lengths.
///
/// Layout: the block's length, the number of rule groups, then each group (its length, the number
/// of its rules, each rule with its length first). A rule is a kind byte, then for a presence rule
/// its subject and whether it asks for presence, for a comparison its subject, its operator's code
/// and its operand. A subject is 0 for the visitor id, else its context slot plus 1. An operand is
/// a tag byte and its value: text or a version (a string), a number (8 bytes), a boolean (a byte),
/// a list (a count, then elements that are not lists), or unusable.
///
/// One reader (`RuleView`, `TargetingOperandView`) serves the three uses: evaluating in place, checking a
/// blob at a start, and reading rules back into the engine's (an explanation, the change events).
enum CompiledTargeting {
    private enum Kind: UInt8 { case always, never, presence, comparison }
    private enum OperandTag: UInt8 { case text, version, number, bool, list, unusable }

    // MARK: Writing

    static func append(_ targeting: Targeting, to bytes: inout [UInt8]) {
        var block: [UInt8] = []
        BinaryJSON.appendVarint(UInt64(targeting.groups.count), to: &block)
        for rules in targeting.groups {
            var group: [UInt8] = []
            BinaryJSON.appendVarint(UInt64(rules.count), to: &group)
            for rule in rules {
                var ruleBytes: [UInt8] = []
                append(rule, to: &ruleBytes)
                appendBlock(ruleBytes, to: &group)
            }
            appendBlock(group, to: &block)
        }
        appendBlock(block, to: &bytes)
    }

    /// `block` after its length.
    static func appendBlock(_ block: [UInt8], to bytes: inout [UInt8]) {
        BinaryJSON.appendVarint(UInt64(block.count), to: &bytes)
        bytes += block
    }

    private static func append(_ rule: TargetingRule, to bytes: inout [UInt8]) {
        switch rule {
        case .always:
            bytes.append(Kind.always.rawValue)
        case .never:
            bytes.append(Kind.never.rawValue)
        case .presence(let subject, let present):
            bytes.append(Kind.presence.rawValue)
            append(subject, to: &bytes)
            bytes.append(present ? 1 : 0)
        case .comparison(let subject, let op, let operand):
            bytes.append(Kind.comparison.rawValue)
            append(subject, to: &bytes)
            bytes.append(op.code)
            append(operand, to: &bytes)
        }
    }

    private static func append(_ subject: TargetingSubject, to bytes: inout [UInt8]) {
        switch subject {
        case .visitorId: BinaryJSON.appendVarint(0, to: &bytes)
        case .context(let slot): BinaryJSON.appendVarint(UInt64(slot) + 1, to: &bytes)
        }
    }

    private static func append(_ operand: TargetingOperand, to bytes: inout [UInt8]) {
        switch operand {
        case .text(let text):
            bytes.append(OperandTag.text.rawValue)
            BinaryJSON.appendString(text, to: &bytes)
        case .version(_, let text):
            bytes.append(OperandTag.version.rawValue)
            BinaryJSON.appendString(text, to: &bytes)
        case .number(let number):
            bytes.append(OperandTag.number.rawValue)
            BinaryJSON.appendFixed(number.bitPattern, to: &bytes)
        case .bool(let bool):
            bytes.append(OperandTag.bool.rawValue)
            bytes.append(bool ? 1 : 0)
        case .list(let elements):
            bytes.append(OperandTag.list.rawValue)
            BinaryJSON.appendVarint(UInt64(elements.count), to: &bytes)
            for element in elements { append(element, to: &bytes) }
        case .unusable:
            bytes.append(OperandTag.unusable.rawValue)
        }
    }

    // MARK: Reading

    /// A rule as it lies in the blob; a comparison's operand is read next (`operand`).
    private enum RuleView {
        case always, never
        case presence(TargetingSubject, present: Bool)
        case comparison(TargetingSubject, TargetingOperator)
    }

    private static func rule(_ input: inout BinaryJSON.Reader, keyCount: Int) throws(BinaryJSON.Malformed) -> RuleView {
        let at = input.offset
        switch Kind(rawValue: try input.byte()) {
        case .always?: return .always
        case .never?: return .never
        case .presence?: return .presence(try subject(&input, keyCount: keyCount), present: try input.bool())
        case .comparison?:
            let subject = try subject(&input, keyCount: keyCount)
            guard let op = TargetingOperator(code: try input.byte()) else {
                throw BinaryJSON.Malformed(reason: "an unknown operator code", offset: at)
            }
            return .comparison(subject, op)
        case nil: throw BinaryJSON.Malformed(reason: "an unknown kind of rule", offset: at)
        }
    }

    private static func subject(_ input: inout BinaryJSON.Reader, keyCount: Int) throws(BinaryJSON.Malformed) -> TargetingSubject {
        let at = input.offset
        let code = try input.varint()
        guard code > 0 else { return .visitorId }
        guard code <= UInt64(keyCount) else { throw BinaryJSON.Malformed(reason: "a context slot past the file's keys", offset: at) }
        return .context(slot: Int(code - 1))
    }

    /// `checked`: the blob's strings were checked when it was read (a decision), so they are not again.
    private static func operand(_ input: inout BinaryJSON.Reader, inList: Bool = false, checked: Bool = false) throws(BinaryJSON.Malformed) -> TargetingOperandView {
        let at = input.offset
        switch OperandTag(rawValue: try input.byte()) {
        case .text?: return .text(checked ? try input.checkedUTF8() : try input.utf8())
        case .version?:
            let text = checked ? try input.checkedUTF8() : try input.utf8()
            guard let version = SemanticVersion(text) else { throw BinaryJSON.Malformed(reason: "a version operand that is no version", offset: at) }
            return .version(version, text)
        case .number?: return .number(Double(bitPattern: try input.fixed()))
        case .bool?: return .bool(try input.bool())
        case .list? where !inList: return .list(count: try input.count())
        case .unusable?: return .unusable
        case .list?, nil: throw BinaryJSON.Malformed(reason: "an unknown operand", offset: at)
        }
    }

    // MARK: Evaluating in place

    /// Whether `visitor` matches the targeting block at the reader, which is left after the block.
    static func matches(_ input: inout BinaryJSON.Reader, _ visitor: PreparedContext, keyCount: Int) throws(BinaryJSON.Malformed) -> Bool {
        let end = try input.blockEnd()
        var matched = false
        groups: for _ in 0..<(try input.count()) {
            let groupEnd = try input.blockEnd()
            for _ in 0..<(try input.count()) {
                let ruleEnd = try input.blockEnd()
                guard try isSatisfied(&input, visitor, keyCount: keyCount) else {
                    try input.seek(to: groupEnd)
                    continue groups
                }
                try input.seek(to: ruleEnd)
            }
            matched = true
            break
        }
        try input.seek(to: end)
        return matched
    }

    private static func isSatisfied(_ input: inout BinaryJSON.Reader, _ visitor: PreparedContext, keyCount: Int) throws(BinaryJSON.Malformed) -> Bool {
        switch try rule(&input, keyCount: keyCount) {
        case .always: return true
        case .never: return false
        case .presence(let subject, let present): return visitor[subject].isPresent == present
        case .comparison(let subject, let op):
            let value = visitor[subject]
            guard value.isPresent else { return false }
            let first = try operand(&input, checked: true)
            guard case .list(let count) = first else { return value.compares(op, first) }
            guard let match = op.listMatch else { return false }
            for _ in 0..<count {
                let element = value.compares(op, try operand(&input, inList: true, checked: true))
                if match == .any, element { return true }
                if match == .every, !element { return false }
            }
            return match == .every
        }
    }

    // MARK: Checking and reading back

    /// Checks the targeting block at the reader, every length, rule and operand, building
    /// nothing, and passes over it. Gives the number of rules of each group in `shape` (which
    /// must be that of the rules as written).
    static func check(_ input: inout BinaryJSON.Reader, keyCount: Int, shape: inout [Int]) throws(BinaryJSON.Malformed) {
        shape.removeAll(keepingCapacity: true)
        let end = try input.blockEnd()
        for _ in 0..<(try input.count()) {
            let groupEnd = try input.blockEnd()
            let count = try input.count()
            for _ in 0..<count {
                let ruleEnd = try input.blockEnd()
                if case .comparison = try rule(&input, keyCount: keyCount), case .list(let elements) = try operand(&input) {
                    for _ in 0..<elements { _ = try operand(&input, inList: true) }
                }
                try input.expect(end: ruleEnd)
            }
            try input.expect(end: groupEnd)
            shape.append(count)
        }
        try input.expect(end: end)
    }

    /// The engine's rules from the targeting block at the reader (checked at the start).
    static func rules(_ input: inout BinaryJSON.Reader, keyCount: Int) throws(BinaryJSON.Malformed) -> [[TargetingRule]] {
        var groups: [[TargetingRule]] = []
        let end = try input.blockEnd()
        for _ in 0..<(try input.count()) {
            let groupEnd = try input.blockEnd()
            var rules: [TargetingRule] = []
            for _ in 0..<(try input.count()) {
                let ruleEnd = try input.blockEnd()
                rules.append(try engineRule(&input, keyCount: keyCount))
                try input.seek(to: ruleEnd)
            }
            try input.seek(to: groupEnd)
            groups.append(rules)
        }
        try input.seek(to: end)
        return groups
    }

    private static func engineRule(_ input: inout BinaryJSON.Reader, keyCount: Int) throws(BinaryJSON.Malformed) -> TargetingRule {
        switch try rule(&input, keyCount: keyCount) {
        case .always: return .always
        case .never: return .never
        case .presence(let subject, let present): return .presence(subject, present: present)
        case .comparison(let subject, let op):
            let first = try operand(&input)
            guard case .list(let count) = first else { return .comparison(subject, op, targetingOperand(first)) }
            var elements: [TargetingOperand] = []
            for _ in 0..<count { elements.append(targetingOperand(try operand(&input, inList: true))) }
            return .comparison(subject, op, .list(elements))
        }
    }

    private static func targetingOperand(_ view: TargetingOperandView) -> TargetingOperand {
        switch view {
        case .text(let text): return .text(String(decoding: text, as: UTF8.self))
        case .version(let version, let text): return .version(version, text: String(decoding: text, as: UTF8.self))
        case .number(let number): return .number(number)
        case .bool(let bool): return .bool(bool)
        case .list, .unusable: return .unusable
        }
    }
}

extension TargetingOperator {
    /// The operator's code in the compiled form: its place among the cases.
    var code: UInt8 {
        switch self {
        case .equals: 0
        case .notEquals: 1
        case .contains: 2
        case .notContains: 3
        case .startsWith: 4
        case .endsWith: 5
        case .greaterThan: 6
        case .greaterThanOrEquals: 7
        case .lowerThan: 8
        case .lowerThanOrEquals: 9
        case .exists: 10
        case .notExists: 11
        case .semverEquals: 12
        case .semverNotEquals: 13
        case .semverGreaterThan: 14
        case .semverLowerThan: 15
        case .semverGreaterThanOrEquals: 16
        case .semverLowerThanOrEquals: 17
        }
    }

    init?(code: UInt8) {
        switch code {
        case 0: self = .equals
        case 1: self = .notEquals
        case 2: self = .contains
        case 3: self = .notContains
        case 4: self = .startsWith
        case 5: self = .endsWith
        case 6: self = .greaterThan
        case 7: self = .greaterThanOrEquals
        case 8: self = .lowerThan
        case 9: self = .lowerThanOrEquals
        case 10: self = .exists
        case 11: self = .notExists
        case 12: self = .semverEquals
        case 13: self = .semverNotEquals
        case 14: self = .semverGreaterThan
        case 15: self = .semverLowerThan
        case 16: self = .semverGreaterThanOrEquals
        case 17: self = .semverLowerThanOrEquals
        default: return nil
        }
    }
}
