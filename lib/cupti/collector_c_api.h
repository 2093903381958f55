#pragma once
/* The C entry points libdaydream_cupti.so exports besides InitializeInjection. daydream's own
 * start/stop API (daydream::collector in daydream_ingest, daydream.collector in Python) finds the
 * injected library with dlopen(RTLD_NOLOAD) and calls these: the injected library and the
 * program's copy of daydream are separate shared objects, so they share no C++ state.
 *
 * Each returns 0 on success. On failure it returns non-zero and writes a NUL-terminated message
 * into `text` (truncated to `capacity`). On success daydream_collector_flush writes the path it
 * wrote into `text`. */

#include <stddef.h>

#define DAYDREAM_COLLECTOR_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*daydream_collector_abi_version_fn)(void);
typedef int (*daydream_collector_start_fn)(char* text, size_t capacity);
typedef int (*daydream_collector_stop_fn)(char* text, size_t capacity);
typedef int (*daydream_collector_flush_fn)(const char* path, char* text, size_t capacity);

#ifdef __cplusplus
}
#endif
