/// What the SDK says about itself to the Flagship servers: `x-sdk-client` and `x-sdk-version` on
/// every request, and the client name in the consent hit (`el: "<client>:true"`).
package enum SDKInfo {
    package static let clientName = "swift-linux"
    /// The SDK's version, the one constant every place reads: `flagship --version`, the start
    /// log line, the `x-sdk-version` header, the `fs_version` context key. CHANGELOG.md's newest
    /// heading names it (a test checks).
    package static let version = "0.3.0"
}
