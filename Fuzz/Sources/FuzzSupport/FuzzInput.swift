import CLibFuzzer
import Flagship
import FlagshipFuzzing
import Foundation

/// Runs one libFuzzer input through `entry`; a broken invariant traps, so libFuzzer reports it
/// as a crash and keeps the input.
package func runFuzzInput(_ entry: FuzzEntry, _ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        _ = try entry.run(Data(bytes: bytes, count: size))
    } catch {
        fatalError("\(entry.rawValue): \(error)")
    }
    return 0
}

/// libFuzzer's driver on the process's arguments (its flags, then corpus directories or inputs).
package func runLibFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var argc = argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}
