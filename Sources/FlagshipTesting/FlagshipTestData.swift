import Flagship
import FlagshipStore

/// The flag values a test gives its visitors: what the in-process Decision API of a
/// ``FlagshipTestEnvironment`` answers to each `fetchFlags()`.
///
/// For each flag key, a visitor gets, in this order:
/// 1. the value set for its visitor id (`setValue(_:for:visitorId:)`), the id the SDK sends
///    (the authenticated id for an authenticated visitor);
/// 2. else the value of the first context rule that matches its context
///    (`setValue(_:for:when:)`, in the order they were set);
/// 3. else the key's default (`setValue(_:for:)`);
/// 4. else nothing: the key is not in the decision (`FLAG_NOT_FOUND`, the read's default).
///
/// Values may change while the SDK runs: the next `fetchFlags()` gets them.
///
/// ```swift
/// let flags = FlagshipTestData()
/// flags.setValue("blue", for: "btnColor")
/// flags.setValue("gold", for: "btnColor", when: { $0["plan"] == "pro" })
/// flags.setValue("green", for: "btnColor", visitorId: "alice")
/// ```
public final class FlagshipTestData: Sendable {
    /// Whether a visitor's context matches: the context as the SDK sent it, the SDK's own keys
    /// (`sdk_osName`, `fs_client`...) included.
    public typealias ContextPredicate = @Sendable (_ context: [String: FSJSONValue]) -> Bool

    private struct ContextRule: Sendable {
        let matches: ContextPredicate
        let value: FSJSONValue
    }

    private struct Flag: Sendable {
        var defaultValue: FSJSONValue?
        var byVisitorId: [String: FSJSONValue] = [:]
        var contextRules: [ContextRule] = []

        var isEmpty: Bool { defaultValue == nil && byVisitorId.isEmpty && contextRules.isEmpty }
    }

    private struct State: Sendable {
        var flags: [String: Flag] = [:]
        var panic = false
    }

    private let state = Locked(State())

    /// Test data with no flag and no panic: every visitor gets an empty decision.
    public init() {}

    // MARK: Setting values

    /// The value of `key` for every visitor that no visitor id or context rule of the key gives one.
    public func setValue(_ value: FSJSONValue, for key: String) {
        state.withLock { $0.flags[key, default: Flag()].defaultValue = value }
    }

    /// The value of `key` for the visitor `visitorId`, over any context rule and the default.
    /// Setting it again replaces it.
    public func setValue(_ value: FSJSONValue, for key: String, visitorId: String) {
        state.withLock { $0.flags[key, default: Flag()].byVisitorId[visitorId] = value }
    }

    /// The value of `key` for the visitors whose context `predicate` accepts, after the key's
    /// visitor id values and the rules set before it. Runs off the test's task, on each fetch.
    public func setValue(_ value: FSJSONValue, for key: String, when predicate: @escaping ContextPredicate) {
        state.withLock { $0.flags[key, default: Flag()].contextRules.append(ContextRule(matches: predicate, value: value)) }
    }

    /// `setValue(_:for:)` for a typed key: only a value of its type.
    public func setValue<Value: TestValueConvertible>(_ value: Value, for key: FlagKey<Value>) {
        setValue(value.testValue, for: key.name)
    }

    /// `setValue(_:for:visitorId:)` for a typed key.
    public func setValue<Value: TestValueConvertible>(_ value: Value, for key: FlagKey<Value>, visitorId: String) {
        setValue(value.testValue, for: key.name, visitorId: visitorId)
    }

    /// `setValue(_:for:when:)` for a typed key.
    public func setValue<Value: TestValueConvertible>(_ value: Value, for key: FlagKey<Value>,
                                                      when predicate: @escaping ContextPredicate) {
        setValue(value.testValue, for: key.name, when: predicate)
    }

    // MARK: Removing values

    /// The key's default goes; its visitor id values and context rules stay.
    public func removeDefault(for key: String) {
        update(key) { $0.defaultValue = nil }
    }

    /// The value set for `visitorId` goes: the visitor gets the key's rules and default again.
    public func removeValue(for key: String, visitorId: String) {
        update(key) { $0.byVisitorId[visitorId] = nil }
    }

    /// Every context rule of the key goes.
    public func removeContextRules(for key: String) {
        update(key) { $0.contextRules = [] }
    }

    /// The key is given to no visitor any more (`FLAG_NOT_FOUND` after the next fetch).
    public func removeFlag(_ key: String) {
        state.withLock { _ = $0.flags.removeValue(forKey: key) }
    }

    /// Every key goes, and panic mode ends.
    public func removeAll() {
        state.withLock { $0 = State() }
    }

    // MARK: Panic

    /// Whether the Decision API answers that the platform switched the SDK off (`panic: true`,
    /// no campaign): every flag gives its default and nothing is sent, until a fetch after it is
    /// set back to `false`.
    public var panic: Bool {
        get { state.withLock { $0.panic } }
        set { state.withLock { $0.panic = newValue } }
    }

    // MARK: Reading

    /// The keys with a value, a visitor id value or a context rule, sorted.
    public var flagKeys: [String] {
        state.withLock { $0.flags.keys.sorted() }
    }

    /// The value `key` takes for a visitor with this id and context, as a decision would give it;
    /// `nil` when it gets none.
    public func value(for key: String, visitorId: String, context: [String: FSJSONValue] = [:]) -> FSJSONValue? {
        guard let flag = state.withLock({ $0.flags[key] }) else { return nil }
        return Self.value(of: flag, visitorId: visitorId, context: context)
    }

    /// Every key's value for a visitor, in key order: the campaigns of the decision. Empty in panic mode.
    func decide(visitorId: String, context: [String: FSJSONValue]) -> (panic: Bool, values: [(key: String, value: FSJSONValue)]) {
        // The predicates are the test's code: they run outside the lock.
        let (flags, panic) = state.withLock { ($0.flags, $0.panic) }
        guard !panic else { return (true, []) }
        let values = flags.sorted { $0.key < $1.key }.compactMap { key, flag in
            Self.value(of: flag, visitorId: visitorId, context: context).map { (key, $0) }
        }
        return (false, values)
    }

    private static func value(of flag: Flag, visitorId: String, context: [String: FSJSONValue]) -> FSJSONValue? {
        if let value = flag.byVisitorId[visitorId] { return value }
        if let rule = flag.contextRules.first(where: { $0.matches(context) }) { return rule.value }
        return flag.defaultValue
    }

    /// Changes the key's flag, if it has one, and drops it once nothing is left of it.
    private func update(_ key: String, _ change: (inout Flag) -> Void) {
        state.withLock { state in
            guard var flag = state.flags[key] else { return }
            change(&flag)
            state.flags[key] = flag.isEmpty ? nil : flag
        }
    }
}
