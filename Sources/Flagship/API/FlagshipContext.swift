import Foundation

/// The predefined context keys. Those auto-set on Linux: `sdk_osName` ("linux"), the OS version
/// (`sdk_osVersionName`, `sdk_osVersionCode`), `sdk_deviceLanguage` (from the locale),
/// `sdk_fsVersion`, `sdk_firstTimeInit` (from the store). Any of them can be overridden with
/// `updateContext(_:_:)`.
public enum FlagshipContext: String, Sendable, CaseIterable {
    case FIRST_TIME_INIT = "sdk_firstTimeInit"
    case LOCALE = "sdk_deviceLanguage"
    case DEVICE_TYPE = "sdk_deviceType"
    case DEVICE_MODEL = "sdk_deviceModel"
    case LOCATION_CITY = "sdk_city"
    case LOCATION_REGION = "sdk_region"
    case LOCATION_COUNTRY = "sdk_country"
    case LOCATION_LAT = "sdk_lat"
    case LOCATION_LONG = "sdk_long"
    case OS_NAME = "sdk_osName"
    case OS_VERSION_CODE = "sdk_osVersionCode"
    case OS_VERSION_NAME = "sdk_osVersionName"
    case CARRIER_NAME = "sdk_carrierName"
    case DEV_MODE = "sdk_devMode"
    case INTERNET_CONNECTION = "sdk_internetConnection"
    case APP_VERSION_NAME = "sdk_versionName"
    case APP_VERSION_CODE = "sdk_versionCode"
    case FLAGSHIP_VERSION = "sdk_fsVersion"
    case INTERFACE_NAME = "sdk_interfaceName"

    /// The context key sent to Flagship.
    public var key: String { rawValue }

    enum ValueKind: String {
        case string = "a String"
        case bool = "a Bool"
        case double = "a Double"
        case int = "an Int"
    }

    var valueKind: ValueKind {
        switch self {
        case .FIRST_TIME_INIT, .DEV_MODE: return .bool
        case .LOCATION_LAT, .LOCATION_LONG: return .double
        case .APP_VERSION_CODE: return .int
        default: return .string
        }
    }

    /// `value` as this key's type, or `nil` when it is not of it (a Double key takes an Int too).
    func accepts(_ value: JSONValue) -> JSONValue? {
        switch (valueKind, value) {
        case (.string, .string), (.bool, .bool), (.int, .int), (.double, .double): return value
        case (.double, .int(let int)): return .double(Double(int))
        default: return nil
        }
    }

    /// The values the SDK sets itself on Linux.
    static func autoSetValues(firstTimeInit: Bool) -> [String: JSONValue] {
        var values = processValues
        values[FIRST_TIME_INIT.key] = .bool(firstTimeInit)
        return values
    }

    /// What does not change while the process runs, read once: reading the system's version
    /// (a file read and a parse) for every visitor took 5% of a visitor's build.
    private static let processValues: [String: JSONValue] = {
        let version = ProcessInfo.processInfo.operatingSystemVersion
        return [
            OS_NAME.key: .string("linux"),
            OS_VERSION_NAME.key: .string(ProcessInfo.processInfo.operatingSystemVersionString),
            OS_VERSION_CODE.key: .string("\(version.majorVersion).\(version.minorVersion).\(version.patchVersion)"),
            LOCALE.key: .string(Locale.current.identifier),
            FLAGSHIP_VERSION.key: .string(SDKInfo.version),
        ]
    }()
}
