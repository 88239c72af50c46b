/// What the SDK says about itself to the Flagship servers: `x-sdk-client` and `x-sdk-version` on
/// every request, and the client name in the consent hit (`el: "<client>:true"`).
enum SDKInfo {
    static let clientName = "swift-linux"
    static let version = "0.1.0"
}
