#if os(Linux)
import CFlagshipURLHostCheck
import CHeapProbe
@testable import Flagship
import FlagshipLocalServer
import Foundation
import Glibc
import XCTest

/// The SDK's version of FoundationNetworking's per-request host check (`CFlagshipURLHostCheck`):
/// it is the one the dynamic linker binds, it decides as FoundationNetworking's does, and it frees
/// what it allocates.
final class URLHostCheckTests: XCTestCase {
    private typealias HostCheck = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Bool

    /// The definition a call from FoundationNetworking binds to: the first in the global scope.
    private func boundCheck() throws -> HostCheck {
        let symbol = try XCTUnwrap(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "CFURLSessionCurlHostIsEqual"),
                                   "FoundationNetworking's host check is not in the process")
        return unsafeBitCast(symbol, to: HostCheck.self)
    }

    /// FoundationNetworking's own definition, the one after the SDK's.
    private func foundationNetworkingsCheck() throws -> HostCheck {
        let next = UnsafeMutableRawPointer(bitPattern: -1)  // RTLD_NEXT
        let symbol = try XCTUnwrap(dlsym(next, "CFURLSessionCurlHostIsEqual"), "no definition after the SDK's")
        return unsafeBitCast(symbol, to: HostCheck.self)
    }

    func testTheSDKsCheckIsTheOneFoundationNetworkingCalls() throws {
        XCTAssertEqual(URLHostCheck.current, .sdk, "the SDK's host check should run in front of FoundationNetworking's")
        let bound = unsafeBitCast(try boundCheck(), to: UnsafeRawPointer.self)
        let foundations = unsafeBitCast(try foundationNetworkingsCheck(), to: UnsafeRawPointer.self)
        XCTAssertNotEqual(bound, foundations, "the call must not bind to FoundationNetworking's definition")
    }

    func testItDecidesAsFoundationNetworkingDoes() throws {
        let check = try boundCheck()
        let foundations = try foundationNetworkingsCheck()
        let cases: [(url: String, host: String, equal: Bool)] = [
            ("http://127.0.0.1:8080/v4/activate?envId=e", "127.0.0.1", true),
            ("https://decision.flagship.io/v2/env/campaigns/?exposeAllKeys=true", "decision.flagship.io", true),
            ("https://events.flagship.io/", "decision.flagship.io", false),
            ("https://user:secret@cdn.flagship.io:443/env/bucketing.json", "cdn.flagship.io", true),
            ("https://cdn.flagship.io/", "cdn.flagship.io.evil.example", false),
            ("https://cdn.flagship.io/", "cdn.flagship.i", false),
            ("not a URL", "not a URL", false),
        ]
        for (url, host, equal) in cases {
            XCTAssertEqual(check(url, host), equal, "\(url) against \(host)")
            XCTAssertEqual(check(url, host), foundations(url, host), "FoundationNetworking decides \(url) against \(host) otherwise")
        }
        // An IPv6 literal: libcurl keeps its brackets, URL.host drops them. Compared without
        // (FoundationNetworking's upstream fix; Swift 6.3's own check refuses every such URL).
        XCTAssertTrue(check("http://[::1]:8080/v4/activate", "::1"))
        XCTAssertFalse(check("http://[::1]:8080/v4/activate", "[::1]"))
        XCTAssertFalse(check("http://[::1]:8080/v4/activate", "::2"))
    }

    func testItFreesWhatItAllocates() throws {
        try XCTSkipIf(ThreadSanitizer.isOn, ThreadSanitizer.heapUnread)
        let grown = heapGrowth(of: try boundCheck())
        // Losing the URL's parts (scheme, host, port, path, query) would be some 10 MB here.
        XCTAssertLessThan(grown, 1_000_000, "100,000 checks kept \(grown) bytes")
    }

    /// The heap kept by 100,000 checks of one URL.
    private func heapGrowth(of check: HostCheck) -> Int64 {
        let url = "http://127.0.0.1:8080/v4/activate?envId=soak", host = "127.0.0.1"
        _ = check(url, host)  // libcurl's first-use allocations
        let before = flagship_test_heap_bytes_in_use()
        for _ in 0..<100_000 {
            XCTAssertTrue(check(url, host))
        }
        return Int64(flagship_test_heap_bytes_in_use()) - Int64(before)
    }

    /// The replacement is compiled only with the toolchains known to leak (Swift 6.3's, clang 21:
    /// the bound in URLHostCheck.c). On a newer toolchain this fails unless the SDK leaves
    /// FoundationNetworking's check alone and that check frees what it allocates: the signal to
    /// look again at the bound, rather than to interpose a symbol that may have changed.
    func testTheReplacementIsBuiltOnlyWhereTheToolchainIsKnownToLeak() throws {
        #if compiler(<6.4)
        XCTAssertEqual(URLHostCheck.current, .sdk, "Swift 6.3's FoundationNetworking leaks: the SDK's check should run")
        try XCTSkipIf(ThreadSanitizer.isOn, ThreadSanitizer.heapUnread)
        // Swift 6.3's own check loses what it allocates: what the replacement is for.
        let foundations = try foundationNetworkingsCheck()
        XCTAssertGreaterThan(heapGrowth(of: foundations), 5_000_000, "FoundationNetworking's check no longer leaks here: narrow the bound")
        #else
        XCTAssertEqual(URLHostCheck.current, .foundationNetworkingNotKnownToLeak)
        try XCTSkipIf(ThreadSanitizer.isOn, ThreadSanitizer.heapUnread)
        let symbol = try XCTUnwrap(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "CFURLSessionCurlHostIsEqual"))
        let grown = heapGrowth(of: unsafeBitCast(symbol, to: HostCheck.self))
        XCTAssertLessThan(grown, 1_000_000, "this toolchain's check leaks too (\(grown) bytes): raise the bound in URLHostCheck.c")
        #endif
    }

    func testEveryRequestOfTheTransportGoesThroughIt() async throws {
        let server = LocalFlagshipServer(.init(envId: "env", apiKey: "key"))
        let base = try server.start()
        defer { server.stop() }
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        let before = flagship_url_host_checks()
        for _ in 0..<5 {
            let response = try await transport.send(FSHTTPRequest(method: .get, url: base.appendingPathComponent("health"), timeout: 5))
            XCTAssertLessThan(response.status, 500)
        }
        XCTAssertGreaterThanOrEqual(flagship_url_host_checks() - before, 5, "each request's host is checked by the SDK's check")
    }
}
#endif
