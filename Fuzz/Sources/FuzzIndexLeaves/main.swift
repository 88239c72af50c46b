import Flagship
import FlagshipFuzzing
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    runFuzzInput(.indexLeaves, data, size)
}

// SwiftPM links an executable's `main` to `<module>_main`: hand the process to libFuzzer's driver.
@_cdecl("FuzzIndexLeaves_main")
func driverMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzz(data!, size) }
}
