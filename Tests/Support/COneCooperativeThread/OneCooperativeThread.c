// At load time, before XCTest runs a test, hands Swift concurrency's global executor to one
// thread when FLAGSHIP_ONE_COOPERATIVE_THREAD=1: the suite then runs as on a machine whose
// cooperative pool has a single thread, and any code that blocks a thread of that pool while it
// waits for other async work hangs instead of passing. The executor itself is Swift
// (OneCooperativeThread.swift in FlagshipTests), called through a weak symbol: a bundle without
// it installs nothing.
#include "COneCooperativeThread.h"
#include <stdlib.h>
#include <string.h>

extern int flagship_tests_install_one_cooperative_thread(void) __attribute__((weak));

static int installed = 0;

__attribute__((constructor)) static void flagship_install_one_cooperative_thread(void) {
    const char *setting = getenv("FLAGSHIP_ONE_COOPERATIVE_THREAD");
    if (setting == NULL || strcmp(setting, "1") != 0) return;
    if (flagship_tests_install_one_cooperative_thread == NULL) abort();
    installed = flagship_tests_install_one_cooperative_thread();
    if (!installed) abort();
}

int flagship_one_cooperative_thread_installed(void) {
    return installed;
}
