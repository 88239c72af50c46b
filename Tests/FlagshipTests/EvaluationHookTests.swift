import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// What a hook saw: `name stage key` for each call, with the evaluation and result it was given.
private struct HookCall: Sendable {
    let name: String
    let stage: FSHookStage
    let evaluation: FSEvaluation
    let result: FSEvaluationResult?

    var line: String { "\(name) \(stage.rawValue) \(evaluation.flagKey)" }
}

/// Records every call; throws at the stages it is told to.
private struct RecordingHook: FlagshipHook {
    struct Failure: Error {}

    let name: String
    let calls: Collected<HookCall>
    var throwing: Set<FSHookStage> = []

    func before(_ evaluation: FSEvaluation) throws {
        calls.append(HookCall(name: name, stage: .before, evaluation: evaluation, result: nil))
        if throwing.contains(.before) { throw Failure() }
    }

    func after(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws {
        calls.append(HookCall(name: name, stage: .after, evaluation: evaluation, result: result))
        if throwing.contains(.after) { throw Failure() }
    }

    func error(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws {
        calls.append(HookCall(name: name, stage: .error, evaluation: evaluation, result: result))
        if throwing.contains(.error) { throw Failure() }
    }
}

/// Stalls the `before` of one flag key until released, on whatever thread reads it.
private final class StallingHook: FlagshipHook {
    let key: String
    let entered: XCTestExpectation
    private let release = DispatchSemaphore(value: 0)

    init(key: String, entered: XCTestExpectation) {
        self.key = key
        self.entered = entered
    }

    func before(_ evaluation: FSEvaluation) {
        guard evaluation.flagKey == key else { return }
        entered.fulfill()
        release.wait()
    }

    func resume() {
        release.signal()
    }
}

/// Evaluation hooks on the real SDK (Decision API mode, the local server, a real store): which
/// reads run them, in what order, with what, and that nothing a hook does changes a read.
final class EvaluationHookTests: SDKTestCase {
    private let calls = Collected<HookCall>()

    private func hook(_ name: String, throwing: Set<FSHookStage> = []) -> RecordingHook {
        RecordingHook(name: name, calls: calls, throwing: throwing)
    }

    private func visitor(_ id: String, hooks: [any FlagshipHook] = [], fetched: Bool = true) async throws -> FSVisitor {
        let visitor = await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE)
            .withHooks(hooks).buildAsync()
        if fetched { try await visitor.fetchFlags() }
        return visitor
    }

    func testTheConfigsThenTheVisitorsHooksRunBeforeAndInReverseAfterWithWhatTheReadAskedAndGot() async throws {
        start(configBuilder().withHooks([hook("config1")]).withHooks([hook("config2")]))
        let visitor = try await visitor("alice", hooks: [hook("visitor")])

        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"), "red")

        XCTAssertEqual(calls.values.map(\.line), [
            "config1 before btnColor", "config2 before btnColor", "visitor before btnColor",
            "visitor after btnColor", "config2 after btnColor", "config1 after btnColor",
        ])
        let after = try XCTUnwrap(calls.values.last)
        XCTAssertEqual(after.evaluation.visitorId, "alice")
        XCTAssertEqual(after.evaluation.defaultValue as? String, "blue")
        XCTAssertEqual(after.evaluation.valueType, "String")
        let result = try XCTUnwrap(after.result)
        XCTAssertEqual(result.value as? String, "red")
        XCTAssertEqual(result.reason, .TARGETING_MATCH)
        XCTAssertNil(result.errorCode)
        XCTAssertNil(result.errorMessage)
        XCTAssertEqual(result.source, .decisionAPI)
        XCTAssertEqual(result.variationId, "var2")
        XCTAssertEqual(result.variationName, "Variation 2")
        XCTAssertEqual(result.metadata.campaignId, "c2")
    }

    /// "No hook, no cost": a visitor without hooks (none configured, none of its own, or empty
    /// lists given) holds no hook chain, so its reads take the plain path, which checks one
    /// optional (`FSVisitor.readFlag`); one hook anywhere gives every read the chain.
    func testAVisitorWithoutHooksHoldsNoChainAndItsReadsTakeThePlainPath() async throws {
        start(configBuilder().withHooks([]))
        let plain = try await visitor("plain", hooks: [])
        XCTAssertNil(plain.hooks, "no chain: the read path is the one without this feature")
        XCTAssertEqual(plain.getFlag(key: "btnColor").value(defaultValue: "blue"), "red")
        XCTAssertEqual(calls.values.count, 0)

        let hooked = try await visitor("hooked", hooks: [hook("visitor")])
        XCTAssertEqual(hooked.hooks?.hooks.count, 1)
        XCTAssertEqual(hooked.getFlag(key: "btnColor").value(defaultValue: "blue"), "red")
        XCTAssertEqual(calls.values.count, 2, "before and after")
    }

    func testAnEvaluationWithAnErrorCodeRunsErrorInsteadOfAfter() async throws {
        start()
        let visitor = try await visitor("bob", hooks: [hook("h")], fetched: false)

        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"), "blue")   // not fetched yet
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "missing").value(defaultValue: 5), 5)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: 0), 0)
        XCTAssertNil(visitor.getFlag(key: "nothing").value(defaultValue: nil as String?), "a null flag: no error")

        let ends = calls.values.filter { $0.stage != .before }
        guard ends.count == 4 else { return XCTFail("\(ends.map(\.line))") }
        XCTAssertEqual(ends.map(\.line), ["h error btnColor", "h error missing", "h error btnColor", "h after nothing"])
        XCTAssertEqual(ends.map { $0.result?.errorCode }, [.PROVIDER_NOT_READY, .FLAG_NOT_FOUND, .TYPE_MISMATCH, nil])
        XCTAssertEqual(ends.map { $0.result?.reason }, [.ERROR, .DEFAULT, .ERROR, .DEFAULT])
        XCTAssertEqual(ends.map { $0.result?.value as? Int }, [nil, 5, 0, nil])
        XCTAssertEqual(ends[2].result?.errorMessage, "the flag's value (a string) is not a Int")
        XCTAssertEqual(ends[2].result?.variationId, "var2", "a mismatch still names the variation")
        XCTAssertEqual(ends[2].evaluation.valueType, "Int")
    }

    func testAVisitorOfAnSDKNotStartedRunsItsOwnHooksWithProviderNotReady() async throws {
        let visitor = await Flagship().newVisitor(visitorId: "dan", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withHooks([hook("h", throwing: [.error])]).buildAsync()

        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"), "blue")
        XCTAssertEqual(calls.values.map(\.line), ["h before btnColor", "h error btnColor"])
        XCTAssertEqual(calls.values.last?.result?.errorCode, .PROVIDER_NOT_READY)
    }

    @available(*, deprecated, message: "reads with the 3.2 value() too")
    func testEveryReadOfAValueRunsTheHooksAndNothingElseDoes() async throws {
        start()
        let visitor = try await visitor("carol", hooks: [hook("h")])
        let flag = visitor.getFlag(key: "price")

        _ = flag.value(defaultValue: 0.0)
        _ = flag.details(defaultValue: 0.0)
        _ = visitor.value(of: FlagKey("count", default: 0))
        _ = visitor.details(of: FlagKey("enabled", default: false))
        _ = visitor.getFlag(key: "btnColor", defaultValue: "blue").value()
        _ = flag.exists()
        _ = flag.metadata()
        _ = flag.status
        flag.visitorExposed()
        _ = visitor.getFlags()

        XCTAssertEqual(calls.values.filter { $0.stage == .after }.map(\.evaluation.flagKey), ["price", "price", "count", "enabled", "btnColor"])
        XCTAssertEqual(calls.values.filter { $0.stage == .before }.count, 5)
        XCTAssertEqual(calls.values.filter { $0.stage == .after }.map(\.evaluation.valueType), ["Double", "Double", "Int", "Bool", "String"])
    }

    /// Every kind of read, on a visitor with hooks and one without: the same values, and each
    /// visitor's variations exposed once.
    @available(*, deprecated, message: "reads with the 3.2 value() too")
    func testAReadWithHooksGivesTheValueAndTheExposureOfAReadWithout() async throws {
        start()
        let plain = try await visitor("v-plain")
        let hooked = try await visitor("v-hooked", hooks: [hook("h")])

        func reads(_ visitor: FSVisitor) -> [String] {
            [
                String(describing: visitor.getFlag(key: "btnColor").value(defaultValue: "blue")),
                String(describing: visitor.getFlag(key: "whole").value(defaultValue: 1)),
                String(describing: visitor.getFlag(key: "price").value(defaultValue: 1.0)),
                String(describing: visitor.getFlag(key: "enabled").value(defaultValue: false)),
                String(describing: visitor.getFlag(key: "nothing").value(defaultValue: "none")),
                String(describing: visitor.getFlag(key: "missing").value(defaultValue: "none")),
                String(describing: visitor.getFlag(key: "btnColor").value(defaultValue: 3)),
                String(describing: visitor.getFlag(key: "list").value(defaultValue: nil as Any?)),
                String(describing: visitor.getFlag(key: "config").value(defaultValue: [String: Any]())?.count),
                String(describing: visitor.value(of: FlagKey("count", default: 0))),
                String(describing: visitor.getFlag(key: "price", defaultValue: 0.5).value()),
            ]
        }
        let expected = reads(plain)
        XCTAssertEqual(reads(hooked), expected)
        XCTAssertEqual(expected[0], "Optional(\"red\")", "the reads are of real flags")
        XCTAssertEqual(reads(hooked), expected, "read again")
        XCTAssertEqual(calls.values.filter { $0.stage != .before }.count, 22, "the hooks saw both rounds")
        await flagship.close()

        let exposed = server.activates.map { "\($0["vid"]?.stringValue ?? "") \($0["vaid"]?.stringValue ?? "")" }
        XCTAssertEqual(exposed.sorted(), ["v-hooked var1", "v-hooked var2", "v-plain var1", "v-plain var2"])
    }

    func testAHookThatThrowsAtAnyStageChangesNoReadAndTheOtherHooksStillRun() async throws {
        start()
        let failing = hook("failing", throwing: [.before, .after, .error])
        let plain = try await visitor("v-plain")
        let hooked = try await visitor("v-hooked", hooks: [failing, hook("next")])

        let failures = try XCTUnwrap(flagship.currentRuntime?.hookFailures)
        for _ in 0..<3 {
            let color = hooked.getFlag(key: "btnColor").details(defaultValue: "blue")
            let plainColor = plain.getFlag(key: "btnColor").details(defaultValue: "blue")
            XCTAssertEqual(color.value, "red")
            XCTAssertEqual(color.value, plainColor.value)
            XCTAssertEqual(color.reason, plainColor.reason)
            XCTAssertEqual(color.variationId, plainColor.variationId)
            let missing = hooked.getFlag(key: "missing").details(defaultValue: 7)
            XCTAssertEqual(missing.value, 7)
            XCTAssertEqual(missing.errorCode, .FLAG_NOT_FOUND)
            XCTAssertEqual(hooked.getFlag(key: "price").value(defaultValue: 0.0), 9.99)
        }
        await flagship.close()

        XCTAssertEqual(calls.values.filter { $0.name == "next" }.count, 18, "3 rounds of 3 reads, 2 stages each")
        XCTAssertEqual(failures.count, 18, "9 befores, 6 afters, 3 errors")
        let logged = log.allText.components(separatedBy: "\n").filter { $0.contains("RecordingHook threw") }
        XCTAssertEqual(logged.count, 3, "once per stage:\n\(logged.joined(separator: "\n"))")
        XCTAssertTrue(logged.contains { $0.contains("threw in its before stage (flag 'btnColor')") && $0.contains("The read's value is unchanged") })
        let exposed = server.activates.map { "\($0["vid"]?.stringValue ?? "") \($0["vaid"]?.stringValue ?? "")" }
        XCTAssertEqual(exposed.sorted(), ["v-hooked var1", "v-hooked var2", "v-plain var2"], "each variation once per visitor")
    }

    /// A hook stalled in one read (on a thread of its own, as a request handler's): meanwhile the
    /// same visitor's other reads, another visitor's, a fetch and a hit all complete; released, the
    /// stalled read returns the flag's value.
    func testAStallingHookDelaysItsOwnReadOnlyNeverOtherReadsFetchesOrHits() async throws {
        start(configBuilder().withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.05)))
        let stalling = StallingHook(key: "btnColor", entered: expectation(description: "the hook stalls the read"))
        let stalled = try await visitor("v-stalled", hooks: [stalling])
        let other = try await visitor("v-other")
        let returned = expectation(description: "the stalled read returns")
        let value = Collected<String>()
        let reader = Thread {
            value.append(stalled.getFlag(key: "btnColor").value(defaultValue: "blue") ?? "nil")
            returned.fulfill()
        }
        reader.start()
        await fulfillment(of: [stalling.entered], timeout: 10)

        XCTAssertEqual(stalled.getFlag(key: "price").value(defaultValue: 0.0), 9.99, "the same visitor, another flag")
        XCTAssertEqual(other.getFlag(key: "btnColor").value(defaultValue: "blue"), "red")
        try await stalled.fetchFlags()
        try await other.fetchFlags()
        try await other.sendHit(FSScreen("home"), until: .committed)
        let hits = try await server.waitForHits(count: 3, timeout: .seconds(10))   // two consent hits, the screen
        XCTAssertEqual(hits.filter { $0["t"]?.stringValue == "SCREENVIEW" }.count, 1, "\(hits)")
        XCTAssertEqual(value.values, [], "still stalled")

        stalling.resume()
        await fulfillment(of: [returned], timeout: 10)
        XCTAssertEqual(value.values, ["red"])
    }
}
