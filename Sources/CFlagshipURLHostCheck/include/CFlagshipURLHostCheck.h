#ifndef CFLAGSHIP_URL_HOST_CHECK_H
#define CFLAGSHIP_URL_HOST_CHECK_H

#include <stdbool.h>

/// How FoundationNetworking's check of a request's host runs in this process.
typedef enum {
    /// This target's check runs, and frees what it allocates.
    FlagshipURLHostCheckReplaced = 0,
    /// FoundationNetworking's own check runs: this target's was not linked in front of it (a
    /// static Swift standard library), or libcurl's URL functions could not be found.
    FlagshipURLHostCheckFoundationNetworking = 1,
    /// FoundationNetworking's own check runs because FLAGSHIP_URL_HOST_CHECK=foundation asked for it.
    FlagshipURLHostCheckFoundationNetworkingAsked = 2,
    /// FoundationNetworking's own check runs: this SDK was built with a toolchain newer than those
    /// known to leak (Swift 6.3's), so it defines no replacement.
    FlagshipURLHostCheckNotKnownToLeak = 3,
} FlagshipURLHostCheckMode;

/// Which check runs when URLSession starts a task in this process.
FlagshipURLHostCheckMode flagship_url_host_check_mode(void);

/// How many hosts the SDK's check compared in this process (0 when it does not run).
unsigned long long flagship_url_host_checks(void);

#endif
