/*
 * DESIGN: what the `clink` binary needs from libclink beyond include/clink/clink.h — hooks
 * that hand out engine internals, so they cannot be part of the public ABI. They are hidden
 * in libclink.so (compiled -fvisibility=hidden, and not clink_*: the version script keeps them
 * local); the binary links the library's static form (ck_lib) and calls them.
 *
 * Threads: as clink.h — any thread; a hook set applies to the jobs started after it.
 */
#ifndef CK_LIB_INTERNAL_H
#define CK_LIB_INTERNAL_H

#include "clink/clink.h"
#include "runtime/exec.h"

/* fn(ctx, executor) for each deployment of every job the engine starts from now on, while it
 * runs (job/local.h on_exec): `clink run --http-port` serves the running job's REST routes
 * from it. */
void ck_lib_set_on_exec(clink_engine_t *e, void (*fn)(void *ctx, ck_exec_t *ex), void *ctx);

#endif
