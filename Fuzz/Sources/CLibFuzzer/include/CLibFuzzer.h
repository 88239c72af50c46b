#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (compiler-rt, FuzzerInterface.h): parses libFuzzer's flags from argv and
// fuzzes `callback` until done; what libFuzzer's own `main` calls.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
