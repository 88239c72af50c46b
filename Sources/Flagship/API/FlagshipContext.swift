import Foundation

/// The predefined context keys. Those auto-set on Linux: `sdk_osName` ("linux"), the OS version
/// (`sdk_osVersionName`, `sdk_osVersionCode`), `sdk_deviceLanguage` (from the locale),
/// `sdk_fsVersion`, `sdk_firstTimeInit` (from the store). Any of them can be overridden with
/// `updateContext(_:_:)`.
public enum FlagshipContext: String, Sendable, CaseIterable {
    /// Whether this is the SDK's first start with its store (Bool). Auto-set.
    case FIRST_TIME_INIT = "sdk_firstTimeInit"
    /// The language of the device, as the locale names it, e.g. `en_US` (String). Auto-set.
    case LOCALE = "sdk_deviceLanguage"
    /// The type of device, e.g. `mobile` (String). Not set on Linux.
    case DEVICE_TYPE = "sdk_deviceType"
    /// The model of the device (String). Not set on Linux.
    case DEVICE_MODEL = "sdk_deviceModel"
    /// The visitor's city, e.g. `toulouse` (String).
    case LOCATION_CITY = "sdk_city"
    /// The visitor's region, e.g. `occitanie` (String).
    case LOCATION_REGION = "sdk_region"
    /// The visitor's country, e.g. `France` (String).
    case LOCATION_COUNTRY = "sdk_country"
    /// The visitor's latitude (Double; an Int is taken as a Double).
    case LOCATION_LAT = "sdk_lat"
    /// The visitor's longitude (Double; an Int is taken as a Double).
    case LOCATION_LONG = "sdk_long"
    /// The OS's name (String). Auto-set: `linux`.
    case OS_NAME = "sdk_osName"
    /// The OS's version, `major.minor.patch` (String). Auto-set.
    case OS_VERSION_CODE = "sdk_osVersionCode"
    /// The OS's version as the system describes it (String). Auto-set.
    case OS_VERSION_NAME = "sdk_osVersionName"
    /// The mobile carrier's name, e.g. `orange` (String).
    case CARRIER_NAME = "sdk_carrierName"
    /// Whether the app runs in debug mode (Bool).
    case DEV_MODE = "sdk_devMode"
    /// The kind of internet connection, e.g. `3g` (String).
    case INTERNET_CONNECTION = "sdk_internetConnection"
    /// The app's version name, e.g. `1.1.2-beta` (String).
    case APP_VERSION_NAME = "sdk_versionName"
    /// The app's version code, e.g. `40` (Int).
    case APP_VERSION_CODE = "sdk_versionCode"
    /// The SDK's version (String). Auto-set.
    case FLAGSHIP_VERSION = "sdk_fsVersion"
    /// The name of the interface the visitor is on, e.g. `ProductPage` (String).
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
    func accepts(_ value: FSJSONValue) -> FSJSONValue? {
        switch (valueKind, value) {
        case (.string, .string), (.bool, .bool), (.int, .int), (.double, .double): return value
        case (.double, .int(let int)): return .double(Double(int))
        default: return nil
        }
    }

    /// The values the SDK sets itself on Linux.
    static func autoSetValues(firstTimeInit: Bool) -> [String: FSJSONValue] {
        var values = processValues
        values[FIRST_TIME_INIT.key] = .bool(firstTimeInit)
        return values
    }

    /// What does not change while the process runs, read once: reading the system's version
    /// (a file read and a parse) for every visitor took 5% of a visitor's build.
    private static let processValues: [String: FSJSONValue] = {
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
