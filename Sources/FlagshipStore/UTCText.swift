import Foundation

/// The times of the store's rows (unix milliseconds) as a person reads them.
package enum UTCText {
    /// `2024-11-21T06:20:00.123Z`. Built from the integer milliseconds: going through a `Date`
    /// (a binary floating point number of seconds) would sometimes print one millisecond less.
    package static func of(unixMilliseconds: Int64) -> String {
        let (seconds, milliseconds) = floorDivision(unixMilliseconds, by: 1000)
        let whole = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
        return String(whole.dropLast()) + "." + String(String(milliseconds + 1000).dropFirst()) + "Z"
    }

    /// Rounded down, for any `value` (`Int64.min` included) and a positive `divisor`.
    package static func floorDivision(_ value: Int64, by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
