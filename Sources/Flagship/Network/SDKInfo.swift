/// What the SDK says about itself to the Flagship servers: `x-sdk-client` and `x-sdk-version` on
/// every request, and the client name in the consent hit (`el: "<client>:true"`).
package enum SDKInfo {
    package static let clientName = "swift-linux"
    /// The SDK's version: sent to the servers, and what `flagship --version` prints.
    package static let version = "0.1.0"
}
