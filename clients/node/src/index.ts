/**
 * redis-xset: typed node-redis commands for xset, the Redis module whose set
 * members each expire on their own.
 *
 *     import { createClient } from 'redis';
 *     import xset from 'redis-xset';
 *
 *     const client = await createClient({ modules: { xset } }).connect();
 *     await client.xset.add('active:users', { alice: 3600 });
 *     await client.xset.members('active:users', { withTtl: true }); // [{ member: 'alice', ttl: 3599998 }]
 *
 * One command object per XSET command, in node-redis's module form
 * (`parseCommand` writes the words, `transformReply` shapes the reply), under
 * a camelCase name and the command's own name (`addEx` and `ADDEX`). Replies
 * are the same JavaScript values under RESP2 and RESP3: a WITHTTL reply, flat
 * under RESP2 and paired under RESP3, is `[{ member, ttl }]` either way. The
 * library is thin: every condition, cap and error is the server's.
 */
import type { CommandParser, RedisArgument } from '@redis/client';

/** A member and its milliseconds left (`-1`: no deadline). */
export interface MemberTtl {
  member: string;
  ttl: number;
}

/** Members with a time each: `{ member: time }`, or `[member, time]` pairs
 * (for Buffer members). */
export type MemberTimes = Record<string, number> | Array<[RedisArgument, number]>;

/** A deadline bound of COUNT and BYDEADLINE: Unix ms, or `'-inf'`, `'+inf'`,
 * `'(1700000000000'` (exclusive). */
export type Bound = number | string;

export type Keys = RedisArgument | Array<RedisArgument>;

export interface AddExOptions {
  condition?: 'NX' | 'XX';
  comparison?: 'GT' | 'LT';
  /** The unit of the times: `EX` seconds (the server's default), `PX`
   * milliseconds, `EXAT`/`PXAT` Unix times. */
  unit?: 'EX' | 'PX' | 'EXAT' | 'PXAT';
  /** Drops the members expiring soonest beyond this many. */
  MAXLEN?: number;
  /** Refuses (a `null` reply) an add that would leave more live members. */
  CAP?: number;
  /** One code per pair instead of a count: 1 added, 2 deadline changed,
   * 3 removed, 0 unchanged. */
  CODES?: boolean;
}

export interface MembersOptions {
  BYDEADLINE?: { min: Bound; max: Bound };
  REV?: boolean;
  LIMIT?: { offset: number; count: number };
  withTtl?: boolean;
}

export interface ScanOptions {
  MATCH?: RedisArgument;
  COUNT?: number;
  withTtl?: boolean;
}

export type ExpireCondition = 'NX' | 'XX' | 'GT' | 'LT';

/** Where XSET.NOTIFY delivers expired members: a stream, trimmed to about
 * `MAXLEN` entries if given. */
export interface NotifyStream {
  STREAM: RedisArgument;
  MAXLEN?: number;
}

// ---- reply shaping ------------------------------------------------------------

/** `[{ member, ttl }]` from a WITHTTL reply: `[[m, t], ...]` (RESP3) or
 * `[m, t, m, t]` (RESP2). */
export function pairs(reply: Array<unknown>): Array<MemberTtl> {
  const out: Array<MemberTtl> = [];
  if (reply.length > 0 && Array.isArray(reply[0])) {
    for (const [member, ttl] of reply as Array<[string, number]>) out.push({ member, ttl: Number(ttl) });
  } else {
    for (let i = 0; i + 1 < reply.length; i += 2) {
      out.push({ member: reply[i] as string, ttl: Number(reply[i + 1]) });
    }
  }
  return out;
}

/** A list of members, or of pairs when the command asked for WITHTTL
 * (`parser.preserve`). */
function listed(reply: unknown, withTtl?: unknown): Array<string> | Array<MemberTtl> {
  return withTtl ? pairs(reply as Array<unknown>) : (reply as Array<string>);
}

const same = <T>(reply: unknown): T => reply as T;

// ---- argument writing ---------------------------------------------------------

function pushTimes(parser: CommandParser, items: MemberTimes): number {
  const entries = Array.isArray(items) ? items : Object.entries(items);
  for (const [member, time] of entries) parser.push(member, String(time));
  return entries.length;
}

function countOf(items: MemberTimes): number {
  return Array.isArray(items) ? items.length : Object.keys(items).length;
}

/** One member as itself, several as a `MEMBERS count ...` block. */
function pushTarget(parser: CommandParser, member: RedisArgument | Array<RedisArgument>) {
  if (Array.isArray(member)) parser.push('MEMBERS', String(member.length), ...member);
  else parser.push(member);
}

function pushKeysCounted(parser: CommandParser, keys: Keys) {
  const list = Array.isArray(keys) ? keys : [keys];
  parser.push(String(list.length));
  parser.pushKeys(list);
}

const readTime = (name: string) => ({
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, member: RedisArgument | Array<RedisArgument>) {
    parser.push(name);
    parser.pushKey(key);
    pushTarget(parser, member);
  },
  transformReply: same<number | Array<number>>,
} as const);

const setTime = (name: string) => ({
  parseCommand(
    parser: CommandParser,
    key: RedisArgument,
    time: number,
    member: RedisArgument | Array<RedisArgument>,
    condition?: ExpireCondition,
  ) {
    parser.push(name);
    parser.pushKey(key);
    parser.push(String(time));
    if (condition) parser.push(condition);
    pushTarget(parser, member);
  },
  transformReply: same<number | Array<number>>,
} as const);

const algebra = (name: string) => ({
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, keys: Keys, options?: { withTtl?: boolean }) {
    parser.push(name);
    pushKeysCounted(parser, keys);
    if (options?.withTtl) parser.push('WITHTTL');
    parser.preserve = options?.withTtl;
  },
  transformReply: listed,
} as const);

const store = (name: string) => ({
  parseCommand(parser: CommandParser, destination: RedisArgument, keys: Keys) {
    parser.push(name);
    parser.pushKey(destination);
    pushKeysCounted(parser, keys);
  },
  transformReply: same<number>,
} as const);

// ---- the commands -------------------------------------------------------------

/** XSET.ADD key member ttl ...: adds or refreshes members, each with a TTL in
 * seconds; how many were new. */
const add = {
  parseCommand(parser: CommandParser, key: RedisArgument, items: MemberTimes) {
    parser.push('XSET.ADD');
    parser.pushKey(key);
    pushTimes(parser, items);
  },
  transformReply: same<number>,
} as const;

/** XSET.ADDEX: adds with conditions, a unit, MAXLEN or CAP; a count, or with
 * `CODES` a code per pair; `null` when CAP refused the add. */
const addEx = {
  parseCommand(parser: CommandParser, key: RedisArgument, items: MemberTimes, options?: AddExOptions) {
    parser.push('XSET.ADDEX');
    parser.pushKey(key);
    if (options?.condition) parser.push(options.condition);
    if (options?.comparison) parser.push(options.comparison);
    if (options?.unit) parser.push(options.unit);
    if (options?.MAXLEN !== undefined) parser.push('MAXLEN', String(options.MAXLEN));
    if (options?.CAP !== undefined) parser.push('CAP', String(options.CAP));
    if (options?.CODES) parser.push('CODES');
    parser.push('MEMBERS', String(countOf(items)));
    pushTimes(parser, items);
  },
  transformReply: same<number | Array<number> | null>,
} as const;

/** XSET.HAS: whether the member is live. */
const has = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, member: RedisArgument) {
    parser.push('XSET.HAS');
    parser.pushKey(key);
    parser.push(member);
  },
  transformReply: (reply: unknown): boolean => reply === 1,
} as const;

/** XSET.MHAS: whether each member is live, in order. */
const mHas = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, members: Array<RedisArgument>) {
    parser.push('XSET.MHAS');
    parser.pushKey(key);
    parser.push(...members);
  },
  transformReply: (reply: unknown): Array<boolean> => (reply as Array<number>).map((x) => x === 1),
} as const;

/** XSET.REM: removes members; how many were live. */
const rem = {
  parseCommand(parser: CommandParser, key: RedisArgument, members: RedisArgument | Array<RedisArgument>) {
    parser.push('XSET.REM');
    parser.pushKey(key);
    parser.pushVariadic(members);
  },
  transformReply: same<number>,
} as const;

/** XSET.CARD: the number of live members. */
const card = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument) {
    parser.push('XSET.CARD');
    parser.pushKey(key);
  },
  transformReply: same<number>,
} as const;

/** XSET.COUNT: live members whose deadline (Unix ms) is within min..max. */
const count = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, min: Bound, max: Bound) {
    parser.push('XSET.COUNT');
    parser.pushKey(key);
    parser.push(String(min), String(max));
  },
  transformReply: same<number>,
} as const;

/** XSET.MEMBERS: live members, soonest deadline first; `withTtl` gives
 * `[{ member, ttl }]`. */
const members = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, options?: MembersOptions) {
    parser.push('XSET.MEMBERS');
    parser.pushKey(key);
    if (options?.BYDEADLINE) parser.push('BYDEADLINE', String(options.BYDEADLINE.min), String(options.BYDEADLINE.max));
    if (options?.REV) parser.push('REV');
    if (options?.LIMIT) parser.push('LIMIT', String(options.LIMIT.offset), String(options.LIMIT.count));
    if (options?.withTtl) parser.push('WITHTTL');
    parser.preserve = options?.withTtl;
  },
  transformReply: listed,
} as const;

/** XSET.PERSIST: removes deadlines; a code per member (-2 not live, -1 had
 * none, 1 removed); an array of members gives an array. */
const persist = {
  parseCommand(parser: CommandParser, key: RedisArgument, member: RedisArgument | Array<RedisArgument>) {
    parser.push('XSET.PERSIST');
    parser.pushKey(key);
    pushTarget(parser, member);
  },
  transformReply: same<number | Array<number>>,
} as const;

/** XSET.SCAN: one step, `{ cursor, members }` (the scan is over at cursor
 * `'0'`); `withTtl` gives `[{ member, ttl }]`. */
const scan = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, cursor: RedisArgument | number, options?: ScanOptions) {
    parser.push('XSET.SCAN');
    parser.pushKey(key);
    parser.push(String(cursor));
    if (options?.MATCH !== undefined) parser.push('MATCH', options.MATCH);
    if (options?.COUNT !== undefined) parser.push('COUNT', String(options.COUNT));
    if (options?.withTtl) parser.push('WITHTTL');
    parser.preserve = options?.withTtl;
  },
  transformReply(reply: unknown, withTtl?: unknown): { cursor: string; members: Array<string> | Array<MemberTtl> } {
    const [cursor, items] = reply as [unknown, unknown];
    return { cursor: String(cursor), members: listed(items, withTtl) };
  },
} as const;

/** XSET.RANDMEMBER: without `count`, one random member or `null`; with it,
 * an array (negative: repeats allowed), `withTtl` pairs. */
const randMember = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, key: RedisArgument, options?: { count?: number; withTtl?: boolean }) {
    parser.push('XSET.RANDMEMBER');
    parser.pushKey(key);
    if (options?.count !== undefined) parser.push(String(options.count));
    if (options?.withTtl) parser.push('WITHTTL');
    parser.preserve = options?.withTtl;
  },
  transformReply(reply: unknown, withTtl?: unknown): string | null | Array<string> | Array<MemberTtl> {
    return Array.isArray(reply) ? listed(reply, withTtl) : (reply as string | null);
  },
} as const;

/** XSET.POP: removes and returns random members, or with `SOONEST` those
 * expiring first: one member or `null` without `count`, an array with it. */
const pop = {
  parseCommand(parser: CommandParser, key: RedisArgument, options?: { count?: number; SOONEST?: boolean }) {
    parser.push('XSET.POP');
    parser.pushKey(key);
    if (options?.count !== undefined) parser.push(String(options.count));
    if (options?.SOONEST) parser.push('SOONEST');
  },
  transformReply: same<string | null | Array<string>>,
} as const;

/** XSET.INTERCARD: the size of the intersection, counting stops at LIMIT. */
const interCard = {
  IS_READ_ONLY: true,
  parseCommand(parser: CommandParser, keys: Keys, options?: { LIMIT?: number }) {
    parser.push('XSET.INTERCARD');
    pushKeysCounted(parser, keys);
    if (options?.LIMIT !== undefined) parser.push('LIMIT', String(options.LIMIT));
  },
  transformReply: same<number>,
} as const;

/** XSET.NOTIFY: with `{ STREAM, MAXLEN }`, each member whose deadline passes
 * is appended, when the server reclaims it, to the stream as an entry with
 * the fields `key`, `member` and `deadline` (Unix ms); with `'OFF'`, delivery
 * stops (both reply `'OK'`). With neither, the stream's name, or `null` when
 * the set delivers nowhere. A write command in every form; in a cluster the
 * stream must hash to the set's slot. */
const notify = {
  parseCommand(parser: CommandParser, key: RedisArgument, delivery?: NotifyStream | 'OFF') {
    parser.push('XSET.NOTIFY');
    parser.pushKey(key);
    if (delivery === 'OFF') {
      parser.push('OFF');
    } else if (delivery !== undefined) {
      parser.push('STREAM');
      parser.pushKey(delivery.STREAM);
      if (delivery.MAXLEN !== undefined) parser.push('MAXLEN', String(delivery.MAXLEN));
    }
  },
  transformReply: same<string | null>,
} as const;

const commands = {
  add,
  addEx,
  has,
  mHas,
  rem,
  card,
  count,
  members,
  /** XSET.TTL: seconds left (-1 no deadline, -2 not live); an array of
   * members gives an array. */
  ttl: readTime('XSET.TTL'),
  /** XSET.PTTL: milliseconds left. */
  pTtl: readTime('XSET.PTTL'),
  /** XSET.EXPIRETIME: deadlines as Unix seconds. */
  expireTime: readTime('XSET.EXPIRETIME'),
  /** XSET.PEXPIRETIME: deadlines as Unix milliseconds. */
  pExpireTime: readTime('XSET.PEXPIRETIME'),
  /** XSET.EXPIRE: sets a TTL in seconds; a code per member (-2 not live, 0
   * condition not met, 1 set, 2 removed). */
  expire: setTime('XSET.EXPIRE'),
  /** XSET.PEXPIRE: a TTL in milliseconds. */
  pExpire: setTime('XSET.PEXPIRE'),
  /** XSET.EXPIREAT: a deadline as Unix seconds. */
  expireAt: setTime('XSET.EXPIREAT'),
  /** XSET.PEXPIREAT: a deadline as Unix milliseconds. */
  pExpireAt: setTime('XSET.PEXPIREAT'),
  persist,
  scan,
  randMember,
  pop,
  /** XSET.INTER: members live in every key, each until its earliest deadline. */
  inter: algebra('XSET.INTER'),
  /** XSET.UNION: members live in any key, each until its latest deadline. */
  union: algebra('XSET.UNION'),
  /** XSET.DIFF: members of the first key in none of the others. */
  diff: algebra('XSET.DIFF'),
  /** XSET.INTERSTORE: stores the intersection with its deadlines; its size. */
  interStore: store('XSET.INTERSTORE'),
  /** XSET.UNIONSTORE: stores the union; its size. */
  unionStore: store('XSET.UNIONSTORE'),
  /** XSET.DIFFSTORE: stores the difference; its size. */
  diffStore: store('XSET.DIFFSTORE'),
  interCard,
  notify,
} as const;

/** The module for `createClient({ modules: { xset } })`: every command under
 * its camelCase name and under the command's name without the prefix. */
const xset = {
  ...commands,
  ADD: add,
  ADDEX: addEx,
  HAS: has,
  MHAS: mHas,
  REM: rem,
  CARD: card,
  COUNT: count,
  MEMBERS: members,
  TTL: commands.ttl,
  PTTL: commands.pTtl,
  EXPIRETIME: commands.expireTime,
  PEXPIRETIME: commands.pExpireTime,
  EXPIRE: commands.expire,
  PEXPIRE: commands.pExpire,
  EXPIREAT: commands.expireAt,
  PEXPIREAT: commands.pExpireAt,
  PERSIST: persist,
  SCAN: scan,
  RANDMEMBER: randMember,
  POP: pop,
  INTER: commands.inter,
  UNION: commands.union,
  DIFF: commands.diff,
  INTERSTORE: commands.interStore,
  UNIONSTORE: commands.unionStore,
  DIFFSTORE: commands.diffStore,
  INTERCARD: interCard,
  NOTIFY: notify,
} as const;

export default xset;
export { xset };
