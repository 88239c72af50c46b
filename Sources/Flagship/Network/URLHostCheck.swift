#if canImport(CFlagshipURLHostCheck)
internal import CFlagshipURLHostCheck
#endif

/// Which version of FoundationNetworking's check of a request's host runs in this process.
///
/// FoundationNetworking asks libcurl, for every task it starts, whether it reads the same host in
/// the URL as Foundation does. In the Swift 6.3 toolchains that check loses the parts of the URL
/// libcurl copied (some 150 bytes of heap per request, for as long as the process runs: a sender
/// making ten requests a second loses about 130 MB a day). The SDK links a version of the same
/// function that frees them (the C target `CFlagshipURLHostCheck`), which the dynamic linker
/// binds in front of FoundationNetworking's.
package enum URLHostCheck: Sendable {
    /// The SDK's version runs, in front of FoundationNetworking's.
    case sdk
    /// FoundationNetworking's runs: the SDK's is not in front of it (a program linked with a
    /// static Swift standard library), or libcurl's URL functions were not found; on Darwin,
    /// Foundation's own networking.
    case foundationNetworking
    /// FoundationNetworking's runs because `FLAGSHIP_URL_HOST_CHECK=foundation` asked for it.
    case foundationNetworkingAsked
    /// FoundationNetworking's runs: the SDK was built with a toolchain newer than those known to
    /// leak (Swift 6.3's), and defines no replacement.
    case foundationNetworkingNotKnownToLeak

    /// The check this process runs (read once, the first time).
    package static var current: URLHostCheck {
        #if canImport(CFlagshipURLHostCheck)
        switch flagship_url_host_check_mode() {
        case FlagshipURLHostCheckReplaced: return .sdk
        case FlagshipURLHostCheckFoundationNetworkingAsked: return .foundationNetworkingAsked
        case FlagshipURLHostCheckNotKnownToLeak: return .foundationNetworkingNotKnownToLeak
        default: return .foundationNetworking
        }
        #else
        return .foundationNetworking
        #endif
    }

    /// One line for a tool's output.
    package var summary: String {
        switch self {
        case .sdk: return "the SDK's (frees what it allocates)"
        case .foundationNetworking: return "FoundationNetworking's"
        case .foundationNetworkingAsked: return "FoundationNetworking's (FLAGSHIP_URL_HOST_CHECK=foundation)"
        case .foundationNetworkingNotKnownToLeak: return "FoundationNetworking's (this toolchain's is not known to leak)"
        }
    }
}
