/*
 * The module floor for scripts/bench: the least any module write command with
 * XSET.ADD's shape pays on this server. FLOOR.ADD key member ttl parses the
 * TTL, opens the key for writing, takes the deadline from the clock, counts
 * the change with RedisModule_ReplicateVerbatim and replies 0. That is what
 * xset's add does where nothing would receive a propagation, as on the
 * bench's servers (no replica, backlog or AOF; src/ffi/propagate.rs); where
 * something would, xset propagates an absolute form instead, which the
 * relative TTL this sends is not.
 * FLOOR.HAS key member is the read floor: it opens the key for reading and
 * replies 0, what any module membership test pays before it looks (the
 * bench points it at the native set it measures SISMEMBER on). Neither
 * stores anything. Built by scripts/bench with the redismodule.h that the
 * redis-module crate ships; never loaded outside the benchmark.
 */
#include <stdlib.h>
#define REDISMODULE_MAIN
#include "redismodule.h"

static int FloorAdd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    long long ttl;
    if (argc != 4) return RedisModule_WrongArity(ctx);
    if (RedisModule_StringToLongLong(argv[3], &ttl) != REDISMODULE_OK || ttl <= 0)
        return RedisModule_ReplyWithError(ctx, "ERR invalid expire time");
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModule_CloseKey(key);
    volatile long long deadline = RedisModule_Milliseconds() + ttl * 1000;
    (void)deadline;
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithLongLong(ctx, 0);
}

static int FloorHas(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithLongLong(ctx, 0);
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (RedisModule_Init(ctx, "floor", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR)
        return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "floor.add", FloorAdd, "write deny-oom fast", 1, 1, 1) ==
        REDISMODULE_ERR)
        return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "floor.has", FloorHas, "readonly fast", 1, 1, 1) ==
        REDISMODULE_ERR)
        return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
