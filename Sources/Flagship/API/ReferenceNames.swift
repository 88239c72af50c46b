import Foundation

// Names the current reference uses beside the SDK's own: its signatures and its snippets spell
// some types and calls differently from its own headings. Each is the same thing under a second
// name, so code copied from the reference compiles as written.

/// The reference's name for the configuration (`start(envId:apiKey:config: FSConfig)`).
public typealias FSConfig = FlagshipConfig

/// The type the reference's `fetchStatus` signature names.
public typealias FetchStatus = FSFetchStatus

/// The type the reference's `OnVisitorExposed` gives its first parameter.
public typealias VisitorExposed = FSVisitorExposed

/// The type the reference's `OnVisitorExposed` gives its second parameter.
public typealias ExposedFlag = FSExposedFlag

extension FSConfigBuilder {
    /// `withTrackingManagerConfig(_:)`, as the reference's tracking example spells it.
    @discardableResult
    public func withTrackingConfig(_ trackingConfig: FSTrackingManagerConfig) -> FSConfigBuilder {
        withTrackingManagerConfig(trackingConfig)
    }
}

extension FSVisitor {
    /// `getContext()`, as the reference's context example spells it.
    public func getCurrentContext() -> [String: Any] {
        getContext()
    }
}

