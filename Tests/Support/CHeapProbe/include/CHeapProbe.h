#ifndef CHEAP_PROBE_H
#define CHEAP_PROBE_H

/// Bytes glibc's malloc has handed out and not had back (`mallinfo2`: arenas and mmap'd chunks),
/// or 0 where there is no glibc: how the tests see that a check frees what it takes. A test
/// helper: no shipped target links it.
unsigned long long flagship_test_heap_bytes_in_use(void);

#endif
