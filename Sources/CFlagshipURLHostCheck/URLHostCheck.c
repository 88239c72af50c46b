// FoundationNetworking (swift-corelibs-foundation) checks, for every task it starts, that libcurl
// reads the same host in the URL as Foundation does: `CFURLSessionCurlHostIsEqual`. In the Swift
// 6.3 toolchains that check parses the URL into a libcurl URL handle and releases the handle with
// `curl_free`, which frees the handle but not the parts libcurl copied into it (scheme, host,
// port, path, query): four or five small allocations lost per request, some 150 bytes of heap,
// for as long as the process runs. swift-corelibs-foundation fixed it upstream on 2026-07-01
// (`curl_url_cleanup`, in the change for IPv6 literals, #5498).
//
// This file defines the same function. The dynamic linker binds FoundationNetworking's call to
// the first definition in the process's search order, which is the executable's, so this one
// runs instead. It is weak: a program linked with a static Swift standard library, where
// FoundationNetworking's definition is in the same link, keeps that one without a
// duplicate-symbol error. It asks libcurl (already loaded by FoundationNetworking) through
// dlsym, so nothing here links libcurl; when it cannot find it, or when
// FLAGSHIP_URL_HOST_CHECK=foundation is set, it calls FoundationNetworking's own definition.
//
// What it decides is what the fixed upstream check decides: libcurl parses the URL, its host
// (an IPv6 literal without its brackets, as URL.host gives it) must equal the expected host.

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include "CFlagshipURLHostCheck.h"

// glibc only: elsewhere (Darwin, musl's static programs) there is no dynamic FoundationNetworking
// to stand in front of. And only with the toolchains known to leak: Swift 6.3's, whose clang (the
// one SwiftPM compiles this file with) is 21. A toolchain with a newer clang ships a newer
// FoundationNetworking, whose check is not known to leak: its definition is left alone there (no
// symbol of FoundationNetworking's is defined here), and `flagship_url_host_check_mode` says so.
// Raising the bound is a decision to take with URLHostCheckTests run on that toolchain.
#if defined(__linux__) && defined(__GLIBC__) && defined(__clang_major__) && __clang_major__ <= 21

#include <dlfcn.h>
#include <pthread.h>

// libcurl's ABI, stable since 7.62 (curl/urlapi.h): the parts a URL handle is asked for.
enum { CURL_URL_PART_URL = 0, CURL_URL_PART_HOST = 5 };

typedef bool (*HostCheck)(const char *url, const char *expectedHost);

static struct {
    void *(*make)(void);
    int (*set)(void *handle, int part, const char *value, unsigned int flags);
    int (*get)(const void *handle, int part, char **value, unsigned int flags);
    void (*cleanup)(void *handle);
    void (*free)(void *pointer);
    HostCheck foundations;
    FlagshipURLHostCheckMode mode;
} curl;

static pthread_once_t curlLoaded = PTHREAD_ONCE_INIT;
static unsigned long long checks = 0;

// The check, under a name of this object's own (hidden: its address is this definition's, never
// looked up), and exported under FoundationNetworking's name as a weak alias.
__attribute__((visibility("hidden"))) bool flagship_compare_url_host(const char *url, const char *expectedHost);
bool CFURLSessionCurlHostIsEqual(const char *url, const char *expectedHost)
    __attribute__((weak, alias("flagship_compare_url_host"), visibility("default")));

static void loadCurl(void) {
    curl.make = (void *(*)(void))dlsym(RTLD_DEFAULT, "curl_url");
    curl.set = (int (*)(void *, int, const char *, unsigned int))dlsym(RTLD_DEFAULT, "curl_url_set");
    curl.get = (int (*)(const void *, int, char **, unsigned int))dlsym(RTLD_DEFAULT, "curl_url_get");
    curl.cleanup = (void (*)(void *))dlsym(RTLD_DEFAULT, "curl_url_cleanup");
    curl.free = (void (*)(void *))dlsym(RTLD_DEFAULT, "curl_free");
    // The definition after this one in the search order: FoundationNetworking's, when this one
    // is in front of it.
    curl.foundations = (HostCheck)dlsym(RTLD_NEXT, "CFURLSessionCurlHostIsEqual");
    const char *asked = getenv("FLAGSHIP_URL_HOST_CHECK");
    // In front when the process-wide lookup FoundationNetworking's call goes through finds this
    // definition (compared by the hidden name: a default-visibility name in a shared library
    // would give the looked-up address whichever it is).
    bool inFront = (HostCheck)dlsym(RTLD_DEFAULT, "CFURLSessionCurlHostIsEqual") == &flagship_compare_url_host;
    bool curlFound = curl.make && curl.set && curl.get && curl.cleanup && curl.free;
    if (asked && strcmp(asked, "foundation") == 0 && curl.foundations) {
        curl.mode = FlagshipURLHostCheckFoundationNetworkingAsked;
    } else if (inFront && curlFound) {
        curl.mode = FlagshipURLHostCheckReplaced;
    } else {
        curl.mode = FlagshipURLHostCheckFoundationNetworking;
    }
}

FlagshipURLHostCheckMode flagship_url_host_check_mode(void) {
    pthread_once(&curlLoaded, loadCurl);
    return curl.mode;
}

unsigned long long flagship_url_host_checks(void) {
    return __atomic_load_n(&checks, __ATOMIC_RELAXED);
}

bool flagship_compare_url_host(const char *url, const char *expectedHost) {
    pthread_once(&curlLoaded, loadCurl);
    if (curl.mode != FlagshipURLHostCheckReplaced) {
        // Without libcurl's URL functions there is nothing to compare with: refusing would fail
        // every request, so FoundationNetworking's check decides.
        return curl.foundations ? curl.foundations(url, expectedHost) : true;
    }
    __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);
    void *handle = curl.make();
    if (handle == NULL) return false;
    bool equal = false;
    char *host = NULL;
    if (curl.set(handle, CURL_URL_PART_URL, url, 0) == 0 && curl.get(handle, CURL_URL_PART_HOST, &host, 0) == 0 && host) {
        size_t length = strlen(host);
        const char *start = host;
        if (length >= 2 && host[0] == '[' && host[length - 1] == ']') {
            start += 1;
            length -= 2;
        }
        equal = length == strlen(expectedHost) && memcmp(start, expectedHost, length) == 0;
        curl.free(host);
    }
    curl.cleanup(handle);
    return equal;
}

#else

FlagshipURLHostCheckMode flagship_url_host_check_mode(void) {
#if defined(__linux__) && defined(__GLIBC__)
    return FlagshipURLHostCheckNotKnownToLeak;
#else
    return FlagshipURLHostCheckFoundationNetworking;
#endif
}

unsigned long long flagship_url_host_checks(void) {
    return 0;
}

#endif
