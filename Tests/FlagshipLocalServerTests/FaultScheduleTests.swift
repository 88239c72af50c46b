import XCTest

@testable import FlagshipLocalServer

/// The schedule behind `injectFault`, request by request, without sockets.
final class FaultScheduleTests: XCTestCase {
    func testRulesApplyToTheirRouteOnly() {
        var schedule = FaultSchedule()
        _ = schedule.add(.status(500), route: .activate, share: .every)

        XCTAssertEqual(schedule.faults(for: .events), [])
        XCTAssertEqual(schedule.faults(for: .activate), [.status(500)])
    }

    func testFractionFollowsItsSeed() {
        func pattern(seed: UInt64) -> [Bool] {
            var schedule = FaultSchedule()
            _ = schedule.add(.dropConnection, route: nil, share: .fraction(0.5, seed: seed))
            return (0..<64).map { _ in !schedule.faults(for: .events).isEmpty }
        }

        XCTAssertEqual(pattern(seed: 7), pattern(seed: 7))
        XCTAssertNotEqual(pattern(seed: 7), pattern(seed: 8))
    }

    func testFractionZeroAndOne() {
        var schedule = FaultSchedule()
        _ = schedule.add(.status(500), route: .events, share: .fraction(0, seed: 1))
        _ = schedule.add(.status(503), route: .campaigns, share: .fraction(1, seed: 1))

        XCTAssertEqual((0..<100).flatMap { _ in schedule.faults(for: .events) }, [])
        XCTAssertEqual((0..<100).flatMap { _ in schedule.faults(for: .campaigns) }.count, 100)
    }

    func testSplitMix64MatchesTheReferenceSequence() {
        // The first outputs of the reference C implementation for seed 0.
        var generator = SplitMix64(seed: 0)

        XCTAssertEqual([generator.next(), generator.next(), generator.next()], [
            0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F,
        ])
    }
}
