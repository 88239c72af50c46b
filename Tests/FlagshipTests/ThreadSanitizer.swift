import Foundation

/// Whether this test bundle was built with `--sanitize=thread` (`make tsan`): its runtime, linked
/// into the bundle, exports `__tsan_init`.
///
/// Two things differ there. The sanitizer's allocator replaces glibc's, so `mallinfo2` reports
/// nothing, and a test that measures the heap with it would pass whatever leaked. And an
/// executable linked with this build's objects must be linked with the sanitizer too.
enum ThreadSanitizer {
    static let isOn = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

    /// Why a heap measurement is skipped under it.
    static let heapUnread = "under the thread sanitizer, whose allocator replaces glibc's, mallinfo2 reports no heap"
}
