// Every command through the node-redis module, against a real server, under
// RESP2 and RESP3 and in a MULTI: the same JavaScript values each time.
// Deadlines are absolute (2100-01-01) or hours away, so no value depends on
// the moment; `Ttl(s)` stands for "milliseconds left, within 5 s below s".
// One test lets a member expire and waits (blocking reads of a consumer group,
// until a deadline) for it in its stream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createClient, type RedisClientType } from '@redis/client';
import xset, { pairs } from '../src/index';
import { ROOT, startServer, type Server } from './server';

const Y2100_MS = 4102444800000;

class Ttl {
  constructor(readonly seconds: number, readonly unit = 1000) {}
  matches(v: unknown): boolean {
    const ms = this.seconds * this.unit;
    return typeof v === 'number' && ms - 5 * this.unit < v && v <= ms;
  }
}
const secs = (s: number) => new Ttl(s, 1);

/** Deep equality where a Ttl matches a number near it. */
function same(got: unknown, want: unknown): boolean {
  if (want instanceof Ttl) return want.matches(got);
  if (Array.isArray(want)) {
    return Array.isArray(got) && got.length === want.length && want.every((w, i) => same(got[i], w));
  }
  if (want !== null && typeof want === 'object') {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return false;
    const keys = Object.keys(want);
    return keys.length === Object.keys(got).length &&
      keys.every((k) => same((got as Record<string, unknown>)[k], (want as Record<string, unknown>)[k]));
  }
  return Object.is(got, want);
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type Client = RedisClientType<{ xset: typeof xset }, {}, {}, 2 | 3, {}>;
type X = Client['xset'];

const A = 'a', OTP = 'otp', ONE = 'one', Q = 'q', S1 = '{s}1', S2 = '{s}2', D = '{s}d', MISSING = 'missing';
const N = 'n', NS = 'n:expired';
const mt = (member: string, ttl: unknown) => ({ member, ttl });

const STEPS: Array<[(x: X) => Promise<unknown>, unknown]> = [
  // adding
  [(x) => x.add(A, { m1: 3600, m2: 7200 }), 2],
  [(x) => x.add(A, { m1: 3600 }), 0],
  [(x) => x.addEx(A, { m3: 100 }, { condition: 'NX', CODES: true }), [1]],
  [(x) => x.addEx(A, [['m3', 100], ['m4', 100]], { condition: 'NX', CODES: true }), [0, 1]],
  [(x) => x.addEx(A, { m5: Y2100_MS }, { unit: 'PXAT' }), 1],
  [(x) => x.addEx(OTP, { c1: 300, c2: 300 }, { CAP: 2 }), 2],
  [(x) => x.addEx(OTP, { c3: 300 }, { CAP: 2 }), null],
  [(x) => x.addEx(OTP, { c3: 300 }, { CAP: 2, CODES: true }), null],
  [(x) => x.addEx(OTP, { c1: 300000 }, { condition: 'XX', comparison: 'GT', unit: 'PX', MAXLEN: 5 }), 0],
  // reading
  [(x) => x.has(A, 'm1'), true],
  [(x) => x.has(A, 'nobody'), false],
  [(x) => x.mHas(A, ['m1', 'nobody', 'm5']), [true, false, true]],
  [(x) => x.card(A), 5],
  [(x) => x.card(MISSING), 0],
  [(x) => x.count(A, Y2100_MS, '+inf'), 1],
  [(x) => x.count(A, '-inf', `(${Y2100_MS}`), 4],
  [(x) => x.members(A), ['m3', 'm4', 'm1', 'm2', 'm5']],
  [(x) => x.members(A, { REV: true, LIMIT: { offset: 0, count: 2 } }), ['m5', 'm2']],
  [(x) => x.members(A, { BYDEADLINE: { min: Y2100_MS, max: '+inf' } }), ['m5']],
  [(x) => x.members(MISSING, { withTtl: true }), []],
  [(x) => x.members(A, { LIMIT: { offset: 0, count: 2 }, withTtl: true }), [mt('m3', new Ttl(100)), mt('m4', new Ttl(100))]],
  [(x) => x.ttl(A, 'm1'), secs(3600)],
  [(x) => x.pTtl(A, 'm2'), new Ttl(7200)],
  [(x) => x.pExpireTime(A, 'm5'), Y2100_MS],
  [(x) => x.expireTime(A, ['m5', 'nobody']), [Y2100_MS / 1000, -2]],
  [(x) => x.pTtl(A, ['m1', 'm2']), [new Ttl(3600), new Ttl(7200)]],
  // deadlines
  [(x) => x.persist(A, 'm2'), 1],
  [(x) => x.persist(A, ['m2', 'nobody']), [-1, -2]],
  [(x) => x.members(A, { REV: true, LIMIT: { offset: 0, count: 1 }, withTtl: true }), [mt('m2', -1)]],
  [(x) => x.ttl(A, ['m2', 'nobody']), [-1, -2]],
  [(x) => x.expire(A, 600, 'm3'), 1],
  [(x) => x.expire(A, 600, ['m3', 'm2', 'nobody'], 'NX'), [0, 1, -2]],
  [(x) => x.pExpire(A, 700000, ['m2'], 'XX'), [1]],
  [(x) => x.expireAt(A, Y2100_MS / 1000, 'm4'), 1],
  [(x) => x.pExpireAt(A, Y2100_MS, 'm4', 'LT'), 0],
  [(x) => x.pExpireAt(A, Y2100_MS + 1000, ['m4'], 'GT'), [1]],
  [(x) => x.expire(A, 0, 'm1'), 2],
  // removing
  [(x) => x.rem(A, ['m4', 'nobody']), 1],
  [(x) => x.card(A), 3],
  [(x) => x.add(Q, { j1: 10, j2: 20, j3: 30 }), 3],
  [(x) => x.pop(Q, { count: 2, SOONEST: true }), ['j1', 'j2']],
  [(x) => x.pop(Q), 'j3'],
  [(x) => x.pop(Q), null],
  [(x) => x.pop(Q, { count: 1 }), []],
  [(x) => x.add(Q, { j4: 10 }), 1],
  [(x) => x.pop(Q, { SOONEST: true }), 'j4'],
  // random and scan
  [(x) => x.add(ONE, { only: 3600 }), 1],
  [(x) => x.persist(ONE, 'only'), 1],
  [(x) => x.randMember(ONE), 'only'],
  [(x) => x.randMember(MISSING), null],
  [(x) => x.randMember(ONE, { count: 2 }), ['only']],
  [(x) => x.randMember(ONE, { count: -2 }), ['only', 'only']],
  [(x) => x.randMember(ONE, { count: 1, withTtl: true }), [mt('only', -1)]],
  [(x) => x.scan(ONE, 0), { cursor: '0', members: ['only'] }],
  [(x) => x.scan(ONE, '0', { MATCH: 'o*', COUNT: 10, withTtl: true }), { cursor: '0', members: [mt('only', -1)] }],
  // set algebra
  [(x) => x.add(S1, { x: 100, y: 200 }), 2],
  [(x) => x.add(S2, { x: 300, z: 10 }), 2],
  [(x) => x.inter([S1, S2]), ['x']],
  [(x) => x.union([S1, S2]), ['z', 'y', 'x']],
  [(x) => x.diff([S1, S2]), ['y']],
  [(x) => x.diff(S1), ['x', 'y']],
  [(x) => x.inter([S1, S2], { withTtl: true }), [mt('x', new Ttl(100))]],
  [(x) => x.union([S1, S2], { withTtl: true }), [mt('z', new Ttl(10)), mt('y', new Ttl(200)), mt('x', new Ttl(300))]],
  [(x) => x.diff([S1, S2], { withTtl: true }), [mt('y', new Ttl(200))]],
  [(x) => x.interStore(D, [S1, S2]), 1],
  [(x) => x.unionStore(D, [S1, S2]), 3],
  [(x) => x.diffStore(D, [S1, S2, MISSING]), 1],
  [(x) => x.interCard([S1, S2]), 1],
  [(x) => x.interCard([S1, S1], { LIMIT: 1 }), 1],
  // delivery of expired members (the test 'an expired member arrives in the
  // stream' waits for one)
  [(x) => x.notify(N), null],
  [(x) => x.notify(N, { STREAM: NS, MAXLEN: 1000 }), 'OK'],
  [(x) => x.notify(N), NS],
  [(x) => x.notify(N, { STREAM: NS }), 'OK'],
  [(x) => x.card(N), 0],
  [(x) => x.notify(N, 'OFF'), 'OK'],
  [(x) => x.notify(N), null],
  [(x) => x.notify(MISSING, 'OFF'), 'OK'],
];

function check(results: Array<unknown>) {
  assert.equal(results.length, STEPS.length);
  results.forEach((got, i) => {
    const want = STEPS[i][1];
    assert.ok(same(got, want), `step ${i}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  });
}

interface Entry { id: string; message: Record<string, string> }

/** The first entries the group `workers` reads from `stream`, waited for by
 * blocking reads until 20 s have passed. */
async function readGroup(client: Client, stream: string): Promise<Array<Entry>> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const reply = (await client.xReadGroup('workers', 'w1', { key: stream, id: '>' }, { COUNT: 10, BLOCK: 2000 })) as
      Array<{ name: string; messages: Array<Entry> }> | null;
    const entries = (reply ?? []).flatMap((s) => s.messages);
    if (entries.length > 0) return entries;
  }
  throw new Error(`nothing arrived in ${stream}`);
}

let server: Server;
before(async () => { server = await startServer(); });
after(() => server?.stop());

for (const RESP of [2, 3] as const) {
  describe(`RESP${RESP}`, () => {
    let client: Client;
    before(async () => {
      client = await createClient({ socket: { port: server.port, host: '127.0.0.1' }, RESP, modules: { xset } }).connect();
    });
    after(() => client?.destroy());

    test('every command', async () => {
      await client.flushAll();
      const results = [];
      for (const [step] of STEPS) results.push(await step(client.xset));
      check(results);
    });

    test('every command in a MULTI', async () => {
      await client.flushAll();
      const multi = client.multi();
      for (const [step] of STEPS) step(multi.xset as unknown as X);
      check(await multi.exec());
    });

    test('the uppercase names are the same commands', async () => {
      await client.flushAll();
      assert.equal(await client.xset.ADD('u', { a: 60 }), 1);
      assert.equal(await client.xset.HAS('u', 'a'), true);
    });

    test('an expired member arrives in the stream', async () => {
      await client.flushAll();
      const LEASES = '{leases}', EXPIRED = '{leases}:expired';
      assert.equal(await client.xset.notify(LEASES, { STREAM: EXPIRED, MAXLEN: 1000 }), 'OK');
      assert.equal(await client.xset.NOTIFY(LEASES), EXPIRED);
      // XSET.NOTIFY made the stream: the group starts at its end.
      await client.xGroupCreate(EXPIRED, 'workers', '$');
      const deadline = Date.now() + 300;
      const items: Array<[string, number]> = [['seat-14', deadline], ['seat-15', deadline + 3_600_000]];
      assert.equal(await client.xset.addEx(LEASES, items, { unit: 'PXAT' }), 2);
      const got = await readGroup(client, EXPIRED);
      assert.deepEqual(got.map((e) => e.message), [{ key: LEASES, member: 'seat-14', deadline: String(deadline) }]);
      assert.equal(await client.xAck(EXPIRED, 'workers', got[0].id), 1);
      assert.deepEqual(await client.xset.members(LEASES), ['seat-15']);
      // Removed by hand: not delivered. The set stays, empty, while it
      // delivers, and goes when delivery stops.
      assert.equal(await client.xset.rem(LEASES, 'seat-15'), 1);
      assert.equal(await client.xset.card(LEASES), 0);
      assert.equal(await client.exists(LEASES), 1);
      assert.equal(await client.xset.notify(LEASES, 'OFF'), 'OK');
      assert.equal(await client.exists(LEASES), 0);
      assert.equal(await client.xset.notify(LEASES), null);
      assert.equal(await client.xLen(EXPIRED), 1);
      await assert.rejects(client.xset.notify(LEASES, { STREAM: LEASES }), /another key than the set/);
    });

    test('a server error rejects', async () => {
      await client.flushAll();
      await assert.rejects(client.xset.addEx('k', { m: 10 }, { condition: 'NX', comparison: 'GT' }), /not compatible/);
      await client.set('plain', 'v');
      await assert.rejects(client.xset.card('plain'), /WRONGTYPE/);
    });

    test('scan steps visit every member', async () => {
      await client.flushAll();
      const items: Record<string, number> = {};
      for (let i = 0; i < 500; i++) items[`user:${i}`] = 3600;
      assert.equal(await client.xset.add('big', items), 500);
      const seen = new Set<string>();
      let cursor = '0';
      do {
        const step = await client.xset.scan('big', cursor, { COUNT: 50, withTtl: true });
        for (const p of step.members as Array<{ member: string; ttl: number }>) {
          assert.ok(new Ttl(3600).matches(p.ttl));
          seen.add(p.member);
        }
        cursor = step.cursor;
      } while (cursor !== '0');
      assert.equal(seen.size, 500);
    });
  });
}

test('pairs reads both shapes', () => {
  assert.deepEqual(pairs(['a', 1, 'b', -1]), [mt('a', 1), mt('b', -1)]);
  assert.deepEqual(pairs([['a', 1], ['b', -1]]), [mt('a', 1), mt('b', -1)]);
  assert.deepEqual(pairs([]), []);
});

// Every command of the command reference (docs/commands/, generated from the
// module's command table) has its command object: a command added to the
// module fails this until the package gains it.
test('a command per XSET command', () => {
  const names = new Set(Object.keys(xset).map((k) => k.toLowerCase()));
  const verbs = readdirSync(join(ROOT, 'docs/commands'))
    .filter((f) => f.startsWith('xset.') && f.endsWith('.md'))
    .map((f) => f.slice('xset.'.length, -'.md'.length));
  assert.ok(verbs.length >= 27);
  assert.deepEqual(verbs.filter((v) => !names.has(v.replace(/-/g, ''))), []);
  // Each camelCase name and its uppercase alias are one command object.
  for (const [name, command] of Object.entries(xset)) {
    assert.equal((xset as Record<string, unknown>)[name.toUpperCase()], command, name);
  }
});
