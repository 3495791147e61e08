#!/usr/bin/env python3
"""Checks the JSON of a `scripts/bench` run (the test suite runs `--quick`):
every section is there, every peer of every table was measured, and the
figures BENCHMARKS.md shows are positive and finite. It asserts no speed and
no ratio: those are shown by the bench, on a machine that is shared and
noisy, not tested. What it catches is a bench that no longer measures what
it prints: a peer that stopped running, a floor module that did not build,
a callgrind attribution that found no `RM_Replicate`, a churn row whose
reclaim timed out or whose Redis 8.2 server could not be fetched.

    python3 scripts/bench_check.py bench.json
"""
import json
import math
import sys

ADD_PEERS = ["SADD", "XSET.ADD", "floor", "ZADD", "ZADD moved", "SET PX/member",
             "push (EVALSHA)", "SADD again"]
READ_PEERS = ["SISMEMBER", "XSET.HAS", "floor read", "ZSCORE", "EXISTS/member",
              "SISMEMBER again"]
HFE_PEERS = ["SADD", "XSET.ADD", "HSETEX", "ZADD moved", "SADD again"]
INSTRUCTION_PEERS = ["SADD", "XSET.ADD", "floor", "ZADD", "SISMEMBER", "XSET.HAS",
                     "floor read"]
CHURN_CASES = ["70%", "99%"]
CHURN_PEERS = ["xset", "SET + SREM", "ZSET + ZREMRANGEBYSCORE", "hash HSETEX"]
CHURN_FIELDS = ["bytes_per_live", "fresh_bytes_per_live", "ratio", "usage_share",
                "fresh_usage_share", "reclaim_s_median", "p50_ms_median", "p99_ms_median",
                "max_ms_median"]
CHURN_TARGETS = ["ratio 70%", "ratio 99%", "reclaim 99%", "PING p99 99%", "PING max 99%",
                 "MEMORY USAGE share 99%"]

problems = []


def expect(ok, what):
    if not ok:
        problems.append(what)


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def check_throughput(rows):
    scenarios = sorted({r["scenario"] for r in rows})
    expect(len(scenarios) == 3, f"throughput: 3 scenarios, got {scenarios}")
    for scen in scenarios:
        for group, peers in (("add", ADD_PEERS), ("membership", READ_PEERS)):
            for pipe in (16, 1):
                for peer in peers:
                    got = [r for r in rows if (r["scenario"], r["group"], r["pipeline"],
                                               r["command"]) == (scen, group, pipe, peer)]
                    where = f"throughput {scen} -P {pipe} {peer}"
                    expect(len(got) == 1, f"{where}: one row, got {len(got)}")
                    for r in got:
                        expect(positive(r["ops_median"]) and positive(r["ratio_median"]),
                               f"{where}: ops/s and ratio measured")
                        if pipe == 16:
                            expect(positive(r["cpu_us_median"]), f"{where}: server CPU measured")
        for peer in ("SMEMBERS", "XSET.MEMBERS", "SMEMBERS again"):
            got = [r for r in rows if (r["scenario"], r["group"], r["command"])
                   == (scen, "whole-set", peer)]
            expect(len(got) == 1 and positive(got[0]["ops_median"])
                   and positive(got[0]["ratio_median"]) and positive(got[0]["cpu_us_median"]),
                   f"throughput {scen} whole-set {peer}: measured once")


def check_hfe(hfe):
    if hfe is None:
        expect(False, "hfe: not measured (the Redis 8.2 server could not be had)")
        return
    for pipe in (16, 1):
        for peer in HFE_PEERS:
            got = [r for r in hfe["rows"] if (r["pipeline"], r["command"]) == (pipe, peer)]
            expect(len(got) == 1 and positive(got[0]["ops_median"])
                   and positive(got[0]["ratio_median"]) and positive(got[0]["cpu_us_median"]),
                   f"hfe -P {pipe} {peer}: measured once")


def check_big(big):
    expect(len(big["runs"]) == 4, f"big: 4 series, got {sorted(big['runs'])}")
    for name, runs in big["runs"].items():
        expect(runs and all(positive(ops) and positive(cpu) for ops, cpu in runs),
               f"big {name}: ops/s and CPU measured")
    for k in ("ops_ratio", "cpu_ratio", "sadd_ops_ratio", "sadd_cpu_ratio"):
        expect(positive(big[k]), f"big: {k} measured")
    expect(positive(big["used_memory"]["xset"]), "big: xset's used_memory read")


def check_memory(rows):
    sizes = sorted({r["size"] for r in rows if "refreshes" not in r})
    expect(len(sizes) >= 5, f"memory: at least 5 sizes, got {sizes}")
    for size in sizes:
        for structure in ("SET", "ZSET", "xset", "key per member"):
            got = [r for r in rows if r["size"] == size and r["structure"] == structure
                   and not r.get("random_deadlines") and "refreshes" not in r]
            expect(len(got) == 1 and positive(got[0]["used_memory_per_member"])
                   and positive(got[0]["memory_usage_per_member"]),
                   f"memory {size} {structure}: measured once")
    expect(any(r.get("random_deadlines") and r["structure"] == "xset" for r in rows),
           "memory: the random-deadline row")
    refreshed = [r for r in rows if "refreshes" in r]
    expect(len(refreshed) == 1 and positive(refreshed[0]["used_memory_per_member"])
           and positive(refreshed[0]["after_fill"]), "memory: the refreshed-set row")


def check_expiry(rows):
    expect(len(rows) == 5, f"expiry: 5 scenarios, got {len(rows)}")
    for r in rows:
        expect(positive(r["reclaim_s_median"]) and positive(r["max_ms_median"]),
               f"expiry {r['scenario']}: reclaim and PINGs measured")
        for run in r["runs"]:
            expect(run["pings"] > 0, f"expiry {r['scenario']}: PINGs sent")
    xset = [r for r in rows if "xset" in r["scenario"]]
    expect(len(xset) == 3 and all(run["xset_expired_members_active"] > 0
                                  for r in xset for run in r["runs"]),
           "expiry: xset's members reclaimed by the active cycle")
    notify = [r for r in xset if "XSET.NOTIFY" in r["scenario"]]
    expect(len(notify) == 1 and all(run["xset_delivered"] == r["members"]
                                    for r in notify for run in r["runs"]),
           "expiry: with XSET.NOTIFY, every member delivered")


def check_churn(churn):
    rows = churn["rows"]
    for case in CHURN_CASES:
        for peer in CHURN_PEERS:
            where = f"churn {case} {peer}"
            got = [r for r in rows if (r["case"], r["structure"]) == (case, peer)]
            expect(len(got) == 1, f"{where}: one row, got {len(got)}")
            for r in got:
                for k in CHURN_FIELDS:
                    expect(positive(r.get(k)), f"{where}: {k} measured")
                expect(r["timeouts"] == 0 and r["runs"]
                       and all(positive(run["reclaim_s"]) and run["pings"] > 0 for run in r["runs"]),
                       f"{where}: every run reclaimed and PINGed")
                if peer == "xset":
                    expect(all(run["xset_expired_members_active"] > 0 for run in r["runs"]),
                           f"{where}: members reclaimed by the active cycle")
    for name in CHURN_TARGETS:
        t = churn["targets"].get(name)
        expect(t is not None and positive(t["value"]) and isinstance(t["met"], bool),
               f"churn: target {name} measured")


def check_rdb(rdb):
    for structure in ("xset", "ZSET"):
        r = rdb[structure]
        expect(all(positive(r[k]) for k in ("bytes", "save_s", "load_s", "load_cpu_s")),
               f"rdb {structure}: size, save, load and CPU measured")


def check_load(load):
    expect(all(positive(load[k]) for k in ("without_ms", "with_ms", "ratio")),
           "load: both servers' reload CPU measured")


def check_verbs(verbs):
    expect(len(verbs) >= 10, f"verbs: at least 10 measured, got {len(verbs)}")
    for name, v in verbs.items():
        expect(positive(v["xset_us"]), f"verbs {name}: measured")


def check_instructions(counts):
    if counts is None:
        expect(False, "instructions: not measured (is valgrind installed?)")
        return
    scenarios = sorted({k.split("|")[0] for k in counts})
    expect(len(scenarios) == 2, f"instructions: 2 scenarios, got {scenarios}")
    for scen in scenarios:
        for peer in INSTRUCTION_PEERS:
            c = counts.get(f"{scen}|{peer}")
            expect(c is not None and positive(c["total"]), f"instructions {scen} {peer}: counted")
        for peer in ("XSET.ADD", "floor"):
            c = counts.get(f"{scen}|{peer}") or {}
            expect(positive(c.get("replicate")) and positive(c.get("command")),
                   f"instructions {scen} {peer}: the command and its RM_Replicate found")
        c = counts.get(f"{scen}|XSET.ADD") or {}
        expect(positive(c.get("xset_self")) and c.get("xset_self", 0) < c.get("total", 0),
               f"instructions {scen} XSET.ADD: xset's own code attributed")


def main():
    with open(sys.argv[1]) as f:
        report = json.load(f)
    checks = {"throughput": check_throughput, "hfe": check_hfe, "big": check_big,
              "memory": check_memory, "expiry": check_expiry, "churn": check_churn,
              "rdb": check_rdb, "load": check_load, "verbs": check_verbs,
              "instructions": check_instructions}
    for name, check in checks.items():
        if name not in report:
            problems.append(f"{name}: section missing")
            continue
        try:
            check(report[name])
        except (KeyError, TypeError, ValueError, IndexError) as e:
            problems.append(f"{name}: malformed ({type(e).__name__}: {e})")
    if problems:
        print("bench check: FAILED", *problems, sep="\n  ", file=sys.stderr)
        sys.exit(1)
    print(f"bench check: every section and peer measured ({report['redis']}, "
          f"xset {report['xset_commit']})")


if __name__ == "__main__":
    main()
