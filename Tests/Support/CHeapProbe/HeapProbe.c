#include "CHeapProbe.h"

// Defines __GLIBC__ (through features.h) before it is tested.
#include <stdlib.h>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>

unsigned long long flagship_test_heap_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (unsigned long long)info.uordblks + (unsigned long long)info.hblkhd;
}
#else
unsigned long long flagship_test_heap_bytes_in_use(void) {
    return 0;
}
#endif
