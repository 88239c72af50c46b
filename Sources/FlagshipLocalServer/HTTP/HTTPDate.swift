#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// HTTP dates (`Last-Modified`, `If-Modified-Since`) in the one form HTTP/1.1 senders use,
/// `Thu, 21 Nov 2024 06:00:00 GMT`, to whole seconds.
///
/// Written with `gmtime_r`/`timegm` rather than a `DateFormatter`: no locale can change the
/// names, and nothing shared needs a lock.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date`, its fraction of a second dropped.
    static func string(from date: Date) -> String {
        var seconds = time_t(wholeSeconds(of: date))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(parts.tm_wday)]), \(twoDigits(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec)) GMT"
    }

    /// The date `text` names, in any of the three forms HTTP recipients must read: IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
    /// (`Sun Nov  6 08:49:37 1994`). `nil` for anything else, which HTTP says to ignore.
    static func date(from text: String) -> Date? {
        let fields = text.split(separator: " ").map(String.init)
        let day: String, month: String, year: String, clock: String
        switch fields.count {
        case 6 where fields[0].hasSuffix(",") && fields[5] == "GMT":
            (day, month, year, clock) = (fields[1], fields[2], fields[3], fields[4])
        case 4 where fields[0].hasSuffix(",") && fields[3] == "GMT":
            let date = fields[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard date.count == 3, let twoDigitYear = Int(date[2]), date[2].count == 2 else { return nil }
            // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
            let currentYear = Calendar(identifier: .gregorian).component(.year, from: Date())
            var fullYear = currentYear - currentYear % 100 + twoDigitYear
            if fullYear > currentYear + 50 { fullYear -= 100 }
            (day, month, year, clock) = (date[0], date[1], String(fullYear), fields[2])
        case 5:
            (day, month, year, clock) = (fields[2], fields[1], fields[4], fields[3])
        default:
            return nil
        }
        return date(day: day, month: month, year: year, clock: clock)
    }

    private static func date(day: String, month: String, year: String, clock: String) -> Date? {
        let time = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard let dayNumber = Int32(day), (1...31).contains(dayNumber),
              let monthIndex = months.firstIndex(of: month),
              let yearNumber = Int32(year), year.count == 4,
              time.count == 3, time.allSatisfy({ $0.count == 2 }),
              let hour = Int32(time[0]), let minute = Int32(time[1]), let second = Int32(time[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var parts = tm()
        parts.tm_year = yearNumber - 1900
        parts.tm_mon = Int32(monthIndex)
        parts.tm_mday = dayNumber
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// Seconds since 1970, rounded down: what an HTTP date can say of `date`.
    static func wholeSeconds(of date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }
}
