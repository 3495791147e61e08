//! The model test's operations: each sends one kind of xset write (or a
//! batch of them) with the reply the model predicts, and updates the model.

use super::*;

impl Run<'_> {
    /// `XSET.ADDEX key [NX|XX] [GT|LT] PXAT [MAXLEN n] [CAP n] [CODES]
    /// MEMBERS n ...`, options in random order.
    /// A `plain` add takes no condition and no cap, so that it surely
    /// grows the set.
    pub(super) fn addex(&mut self, k: usize, pairs: Vec<(Vec<u8>, u64)>, plain: bool) {
        let key = self.keys[k].clone();
        let presence = match self.rng.below(10) {
            _ if plain => Presence::Any,
            0 | 1 => Presence::Nx,
            2 | 3 => Presence::Xx,
            _ => Presence::Any,
        };
        let compare = match self.rng.below(10) {
            _ if plain || presence == Presence::Nx => Compare::Any,
            0 | 1 => Compare::Gt,
            2 | 3 => Compare::Lt,
            _ => Compare::Any,
        };
        let codes = self.rng.chance(50);
        let before = self.model.get(&key).cloned().unwrap_or_default();
        let mut after = before.clone();
        // A member named twice counts once, its last pair wins; the pairs
        // before it are untouched (code 0).
        let mut reply = vec![0; pairs.len()];
        for (i, (m, d)) in pairs.iter().enumerate() {
            if pairs[i + 1..].iter().any(|(o, _)| o == m) {
                continue;
            }
            reply[i] = add_one(&mut after, m, *d, self.now, presence, compare);
        }
        let added = reply.iter().filter(|&&c| c == 1).count() as i64;
        // CAP refuses an add that would leave more than `cap` live members
        // (counted before any MAXLEN trim).
        let cap = self
            .rng
            .chance(if plain { 0 } else { 8 })
            .then(|| (after.len() as i64 + self.rng.below(5) as i64 - 2).max(1) as usize);
        let refused = cap.is_some_and(|c| after.len() > c);
        let mut max_len = None;
        if !refused && !plain && self.rng.chance(12) && !after.is_empty() {
            let m = (after.len() as i64 - self.rng.below(4) as i64).max(1) as usize;
            if cut_is_exact(&after, after.len().saturating_sub(m)) {
                max_len = Some(m);
                self.note("MAXLEN given");
                if after.len() > m {
                    self.note("MAXLEN trimmed");
                    let k = after.len() - m;
                    take_soonest(&mut after, k);
                }
            }
        }
        let mut options: Vec<Vec<Vec<u8>>> = vec![vec![b"PXAT".to_vec()]];
        match presence {
            Presence::Nx => options.push(vec![b"NX".to_vec()]),
            Presence::Xx => options.push(vec![b"XX".to_vec()]),
            Presence::Any => {}
        }
        match compare {
            Compare::Gt => options.push(vec![b"GT".to_vec()]),
            Compare::Lt => options.push(vec![b"LT".to_vec()]),
            Compare::Any => {}
        }
        if let Some(m) = max_len {
            options.push(vec![b"MAXLEN".to_vec(), m.to_string().into_bytes()]);
        }
        if let Some(c) = cap {
            options.push(vec![b"CAP".to_vec(), c.to_string().into_bytes()]);
        }
        if codes {
            options.push(vec![b"CODES".to_vec()]);
        }
        for i in (1..options.len()).rev() {
            let j = self.rng.index(i + 1);
            options.swap(i, j);
        }
        let mut args = vec![b"XSET.ADDEX".to_vec(), key.clone().into_bytes()];
        args.extend(options.into_iter().flatten());
        args.push(b"MEMBERS".to_vec());
        args.push(pairs.len().to_string().into_bytes());
        for (m, d) in pairs {
            args.push(m);
            args.push(d.to_string().into_bytes());
        }
        let expect = if refused {
            Expect::Nil
        } else if codes {
            Expect::Codes(reply)
        } else {
            Expect::Int(added)
        };
        if !refused {
            self.set_model(&key, after);
        } else {
            self.names.insert(key.clone());
        }
        self.emit(args, expect);
    }

    pub(super) fn random_addex(&mut self, k: usize) {
        let most = if self.rng.chance(20) { 16 } else { 5 };
        let n = 1 + self.rng.index(most);
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            // Now and then the same member twice in one command.
            let m = if !pairs.is_empty() && self.rng.chance(8) {
                let i = self.rng.index(pairs.len());
                let (m, _): &(Vec<u8>, u64) = &pairs[i];
                m.clone()
            } else {
                self.pick(k)
            };
            let cur = self
                .model
                .get(&self.keys[k])
                .and_then(|s| s.get(&m))
                .copied();
            let d = self.time(cur, false);
            pairs.push((m, d));
        }
        self.addex(k, pairs, false);
    }

    pub(super) fn rem(&mut self, k: usize, members: Vec<Vec<u8>>) {
        let key = self.keys[k].clone();
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let removed = members.iter().filter(|m| set.remove(*m).is_some()).count();
        let mut args = vec![b"XSET.REM".to_vec(), key.clone().into_bytes()];
        args.extend(members);
        self.set_model(&key, set);
        self.emit(args, Expect::Int(removed as i64));
    }

    /// `XSET.PEXPIREAT` or `XSET.PERSIST` on one member (integer reply) or
    /// a `MEMBERS` block (array of codes), members applied in order.
    pub(super) fn expire_or_persist(&mut self, k: usize, persist: bool) {
        let key = self.keys[k].clone();
        let n = 1 + self.rng.index(6);
        let members: Vec<Vec<u8>> = (0..n).map(|_| self.pick(k)).collect();
        let block = n > 1 || self.rng.chance(50);
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let mut args;
        let mut codes = Vec::with_capacity(n);
        if persist {
            args = vec![b"XSET.PERSIST".to_vec(), key.clone().into_bytes()];
            for m in &members {
                codes.push(match set.get(m).copied() {
                    None => -2,
                    Some(NONE) => -1,
                    Some(_) => {
                        set.insert(m.clone(), NONE);
                        1
                    }
                });
            }
        } else {
            let cur = set.get(&members[0]).copied();
            let t = self.time(cur, true);
            let cond = ["", "NX", "XX", "GT", "LT"][self.rng.index(5)];
            args = vec![
                b"XSET.PEXPIREAT".to_vec(),
                key.clone().into_bytes(),
                t.to_string().into_bytes(),
            ];
            if !cond.is_empty() {
                args.push(cond.as_bytes().to_vec());
            }
            for m in &members {
                codes.push(match set.get(m).copied() {
                    None => -2,
                    Some(cur) => {
                        let allowed = match cond {
                            "NX" => cur == NONE,
                            "XX" => cur != NONE,
                            "GT" => t > cur,
                            "LT" => t < cur,
                            _ => true,
                        };
                        if !allowed {
                            0
                        } else if t <= self.now {
                            set.remove(m);
                            2
                        } else {
                            set.insert(m.clone(), t);
                            1
                        }
                    }
                });
            }
        }
        if block {
            args.push(b"MEMBERS".to_vec());
            args.push(n.to_string().into_bytes());
        }
        args.extend(members);
        self.set_model(&key, set);
        let expect = if block {
            Expect::Codes(codes)
        } else {
            Expect::Int(codes[0])
        };
        self.emit(args, expect);
    }

    /// `XSET.POP key count SOONEST`, with a count whose cut is exact (else
    /// nothing is sent).
    pub(super) fn pop(&mut self, k: usize, count: usize) {
        let key = self.keys[k].clone();
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let mut count = count.max(1);
        while count > 1 && !cut_is_exact(&set, count) {
            count -= 1;
        }
        if !cut_is_exact(&set, count) {
            return;
        }
        let popped = take_soonest(&mut set, count);
        self.set_model(&key, set);
        self.emit(
            vec![
                b"XSET.POP".to_vec(),
                key.into_bytes(),
                count.to_string().into_bytes(),
                b"SOONEST".to_vec(),
            ],
            Expect::Popped(popped),
        );
    }

    /// `XSET.POP key [count [SOONEST]]` where the reply decides the model:
    /// a random pop, or a soonest-first pop whose cut falls among equal
    /// deadlines. Sent alone (after the pending batch), the reply checked
    /// to be one of the outcomes the reference allows, then the members it
    /// names leave the model. Which members that is varies from run to run
    /// (a large set's hash is keyed at random), so these pops come last in
    /// a seed, where no later choice of the generator depends on them.
    pub(super) fn pop_checked(&mut self, k: usize) {
        self.flush();
        self.step += 1;
        let key = self.keys[k].clone();
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let form = self.rng.below(3);
        let count = 1 + self.rng.index(8);
        let mut args = vec![b"XSET.POP".to_vec(), key.clone().into_bytes()];
        if form > 0 {
            args.push(count.to_string().into_bytes());
        }
        if form == 2 {
            args.push(b"SOONEST".to_vec());
        }
        let at = format!(
            "seed {:#x} step {}: `{}`",
            self.seed,
            self.step,
            show_cmd(&args)
        );
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let reply: Value = q(self.pc, &refs);
        let popped: Vec<Vec<u8>> = match (form, reply) {
            (0, Value::Nil) if set.is_empty() => Vec::new(),
            (0, Value::BulkString(m)) => vec![m],
            (_, Value::Array(items)) if form > 0 => items
                .into_iter()
                .map(|v| match v {
                    Value::BulkString(m) => m,
                    v => panic!("{at} replied {v:?} among its members"),
                })
                .collect(),
            (_, v) => panic!("{at} replied {v:?} for a set of {} members", set.len()),
        };
        let want = if form == 0 { 1 } else { count };
        assert_eq!(
            popped.len(),
            want.min(set.len()),
            "{at}: popped {} of {} members",
            popped.len(),
            set.len()
        );
        let order = sorted_by_deadline(&set);
        let soonest: Vec<u64> = order.iter().take(popped.len()).map(|&(_, d)| d).collect();
        let mut deadlines = Vec::with_capacity(popped.len());
        for m in &popped {
            let d = set.remove(m).unwrap_or_else(|| {
                panic!(
                    "{at} popped '{}', not a member (or popped twice)",
                    show_bytes(m)
                )
            });
            deadlines.push(d);
        }
        if form == 2 {
            assert_eq!(
                deadlines, soonest,
                "{at}: SOONEST popped these deadlines, not the soonest ones in order"
            );
        }
        self.note(format!("xset.pop checked, form {form}"));
        self.set_model(&key, set);
    }

    /// `XSET.UNIONSTORE|INTERSTORE|DIFFSTORE dst n key ...`: union keeps a
    /// member's latest deadline, intersection its earliest, difference the
    /// first key's (no deadline is the latest of all).
    pub(super) fn store(&mut self) {
        let i = self.key_op();
        let dst = self.keys[i].clone();
        let n = 1 + self.rng.index(3);
        let srcs: Vec<String> = (0..n)
            .map(|_| {
                let i = self.key_op();
                self.keys[i].clone()
            })
            .collect();
        let sets: Vec<Set> = srcs
            .iter()
            .map(|s| self.model.get(s).cloned().unwrap_or_default())
            .collect();
        let which = self.rng.index(3);
        let mut out = Set::new();
        match which {
            0 => {
                for s in &sets {
                    for (m, &d) in s {
                        let e = out.entry(m.clone()).or_insert(d);
                        *e = (*e).max(d);
                    }
                }
            }
            1 => {
                for (m, &d) in &sets[0] {
                    let mut earliest = d;
                    if sets[1..].iter().all(|s| {
                        s.get(m).is_some_and(|&o| {
                            earliest = earliest.min(o);
                            true
                        })
                    }) {
                        out.insert(m.clone(), earliest);
                    }
                }
            }
            _ => {
                for (m, &d) in &sets[0] {
                    if sets[1..].iter().all(|s| !s.contains_key(m)) {
                        out.insert(m.clone(), d);
                    }
                }
            }
        }
        let name = ["XSET.UNIONSTORE", "XSET.INTERSTORE", "XSET.DIFFSTORE"][which];
        let mut args = vec![
            name.as_bytes().to_vec(),
            dst.clone().into_bytes(),
            n.to_string().into_bytes(),
        ];
        args.extend(srcs.into_iter().map(String::into_bytes));
        let len = out.len() as i64;
        self.set_model(&dst, out);
        self.emit(args, Expect::Int(len));
    }

    pub(super) fn random_op(&mut self) {
        let k = self.key_op();
        let key = self.keys[k].clone();
        match self.rng.below(100) {
            0..=39 => self.random_addex(k),
            40..=54 => {
                let n = 1 + self.rng.index(5);
                let members = (0..n).map(|_| self.pick(k)).collect();
                self.rem(k, members);
            }
            55..=69 => self.expire_or_persist(k, false),
            70..=79 => self.expire_or_persist(k, true),
            80..=84 => {
                let count = 1 + self.rng.index(6);
                self.pop(k, count);
            }
            85..=88 => self.store(),
            91..=92 => {
                let existed = self.model.contains_key(&key);
                self.set_model(&key, Set::new());
                self.emit(
                    vec![b"DEL".to_vec(), key.into_bytes()],
                    Expect::Int(existed as i64),
                );
            }
            89 => {
                let i = self.key_op();
                let dst = self.keys[i].clone();
                let replace = self.rng.chance(50);
                if dst != key {
                    let copied = match self.model.get(&key).cloned() {
                        Some(set) if replace || !self.model.contains_key(&dst) => {
                            self.set_model(&dst, set);
                            1
                        }
                        _ => 0,
                    };
                    let mut args = vec![b"COPY".to_vec(), key.into_bytes(), dst.into_bytes()];
                    if replace {
                        args.push(b"REPLACE".to_vec());
                    }
                    self.emit(args, Expect::Int(copied));
                }
            }
            90 => {
                let i = self.key_op();
                let dst = self.keys[i].clone();
                if dst != key && self.model.contains_key(&key) {
                    let set = self.model.remove(&key).expect("source");
                    self.set_model(&dst, set);
                    self.emit(
                        vec![b"RENAME".to_vec(), key.into_bytes(), dst.into_bytes()],
                        Expect::Okay,
                    );
                }
            }
            _ => {
                let len = self.model.get(&key).map_or(0, |s| s.len());
                self.emit(
                    vec![b"XSET.CARD".to_vec(), key.into_bytes()],
                    Expect::Int(len as i64),
                );
            }
        }
    }

    /// Grows key `k` by `extra` new members, a hundred per add.
    pub(super) fn grow(&mut self, k: usize, extra: usize) {
        let mut left = extra;
        while left > 0 {
            let n = left.min(100);
            let pairs = (0..n)
                .map(|_| {
                    let mut m = self.member();
                    // Longer members make a collision with an existing one
                    // rare, so the set really grows.
                    m.extend_from_slice(&self.rng.next().to_le_bytes()[..4]);
                    m.truncate(24);
                    let d = if self.rng.chance(10) {
                        self.now + HOUR + 60_000 * self.rng.below(60)
                    } else {
                        self.now + HOUR + self.rng.below(HOUR)
                    };
                    (m, d)
                })
                .collect();
            self.addex(k, pairs, true);
            left -= n;
        }
    }

    /// Shrinks key `k` to about `keep` members: mostly `XSET.REM` of a
    /// hundred at a time, with past-time `XSET.PEXPIREAT` blocks and
    /// `XSET.POP` mixed in.
    pub(super) fn shrink(&mut self, k: usize, keep: usize) {
        let key = self.keys[k].clone();
        loop {
            let len = self.model.get(&key).map_or(0, |s| s.len());
            if len <= keep {
                break;
            }
            let n = (len - keep).min(100);
            let members: Vec<Vec<u8>> = {
                let set = &self.model[&key];
                let all: Vec<&Vec<u8>> = set.keys().collect();
                let start = self.rng.index(all.len());
                (0..n)
                    .map(|i| all[(start + i) % all.len()].clone())
                    .collect()
            };
            match self.rng.below(10) {
                0 => self.pop(k, n),
                1 => {
                    let mut set = self.model[&key].clone();
                    let mut args = vec![
                        b"XSET.PEXPIREAT".to_vec(),
                        key.clone().into_bytes(),
                        (self.now - 1).to_string().into_bytes(),
                        b"MEMBERS".to_vec(),
                        members.len().to_string().into_bytes(),
                    ];
                    let codes = members
                        .iter()
                        .map(|m| if set.remove(m).is_some() { 2 } else { -2 })
                        .collect();
                    args.extend(members);
                    self.set_model(&key, set);
                    self.emit(args, Expect::Codes(codes));
                }
                _ => self.rem(k, members),
            }
            // A few random writes in between, while the set is large.
            for _ in 0..3 {
                self.random_op();
            }
        }
    }
}
