import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

final class SDKConcurrencyTests: SDKTestCase {
    func testVisitorsUsedFromManyTasksAtOnceLoseNothing() async throws {
        start(configBuilder().withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 5, batchIntervalTimer: 60)))
        let shared = flagship.newVisitor(visitorId: "shared", hasConsented: true, instanceType: .NEW_INSTANCE).build()
        try await shared.fetchFlags()
        let tasks = 8
        let hitsPerTask = 10

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask { [flagship] in
                    let own = flagship!.newVisitor(visitorId: "v\(task)", hasConsented: true, instanceType: .NEW_INSTANCE).build()
                    for round in 0..<hitsPerTask {
                        shared.updateContext("task\(task)", round)
                        _ = shared.getFlag(key: "btnColor").value(defaultValue: "blue")
                        try await own.fetchFlags()
                        _ = own.getFlag(key: "price").value(defaultValue: 0.0)
                        try await own.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "round-\(round)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        await flagship.close()

        let events = server.hits.filter { $0["ea"]?.stringValue?.hasPrefix("round-") ?? false }
        XCTAssertEqual(events.count, tasks * hitsPerTask)
        XCTAssertEqual(Set(events.compactMap { hit in hit["vid"]?.stringValue.map { "\($0)/\(hit["ea"]!.stringValue!)" } }).count, tasks * hitsPerTask, "no duplicate")
        XCTAssertEqual(server.activates.filter { $0["vid"] == "shared" }.count, 1, "one activate per variation for one visitor instance")
        XCTAssertEqual(shared.getContext().keys.filter { $0.hasPrefix("task") }.count, tasks)
    }
}
