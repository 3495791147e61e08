//! The model test's checks: the primary against the model, the replica
//! against the primary, and each key across reloads and `DUMP`/`RESTORE`.

use super::*;

impl Run<'_> {
    /// Checks the primary against the model, then the replica against the
    /// primary.
    pub(super) fn checkpoint(&mut self, what: &str) {
        self.flush();
        let at = format!("seed {:#x} after step {} ({what})", self.seed, self.step);
        let names: Vec<String> = self.names.iter().cloned().collect();
        let mut primary = Vec::with_capacity(names.len());
        for key in &names {
            let want = as_snapshot(self.model.get(key));
            let got = snapshot(self.pc, key);
            assert!(
                got == want,
                "{at}: the primary's {key} differs from the model: {}",
                diff(&want, &got)
            );
            let exists: i64 = q(self.pc, c!["EXISTS", key]);
            let kind: String = q(self.pc, c!["TYPE", key]);
            let expected = if self.model.contains_key(key) {
                (1, "xset-type")
            } else {
                (0, "none")
            };
            assert_eq!(
                (exists, kind.as_str()),
                expected,
                "{at}: EXISTS and TYPE of {key} on the primary (an emptied set must not exist)"
            );
            // The one exactly documented order: by deadline, no deadline
            // last, equal deadlines in byte order.
            let order: Vec<Vec<u8>> = self
                .model
                .get(key)
                .map(|s| {
                    sorted_by_deadline(s)
                        .into_iter()
                        .map(|(m, _)| m.clone())
                        .collect()
                })
                .unwrap_or_default();
            let listed: Vec<Vec<u8>> = q(self.pc, c!["XSET.MEMBERS", key]);
            assert!(
                listed == order,
                "{at}: XSET.MEMBERS {key} on the primary is not in (deadline, bytes) order"
            );
            primary.push(got);
        }
        wait_replicated(self.pc);
        for (key, theirs) in names.iter().zip(&primary) {
            let got = snapshot(self.rc, key);
            assert!(
                got == *theirs,
                "{at}: the replica's {key} differs from the primary's: {}",
                diff(theirs, &got)
            );
            let listed: Vec<Vec<u8>> = q(self.rc, c!["XSET.MEMBERS", key]);
            let mut order = theirs.clone();
            order.sort_by_key(|(m, d)| (*d as u64, m.clone()));
            assert!(
                listed.iter().eq(order.iter().map(|(m, _)| m)),
                "{at}: XSET.MEMBERS {key} on the replica is not in (deadline, bytes) order"
            );
            let exists: i64 = q(self.rc, c!["EXISTS", key]);
            assert_eq!(
                exists,
                self.model.contains_key(key) as i64,
                "{at}: EXISTS {key} on the replica"
            );
        }
        let digest = |c: &mut Connection| q::<String>(c, c!["DEBUG", "DIGEST"]);
        assert_eq!(
            digest(self.rc),
            digest(self.pc),
            "{at}: DEBUG DIGEST of the replica and the primary"
        );
    }

    /// `DEBUG RELOAD` and `DEBUG LOADAOF` keep every key as it was, and
    /// `DUMP` + `RESTORE` of each key into a new name gives the same set (on
    /// the replica too).
    pub(super) fn reload_and_restore(&mut self) {
        self.flush();
        let at = format!("seed {:#x} at the end", self.seed);
        let names: Vec<String> = self.model.keys().cloned().collect();
        let before: Vec<_> = names.iter().map(|k| snapshot(self.pc, k)).collect();
        let digest_before: String = q(self.pc, c!["DEBUG", "DIGEST"]);
        // LOADAOF twice: the AOF rewritten mid-seed plus the commands
        // appended since, then an AOF rewritten from the final state.
        for how in ["RELOAD", "LOADAOF", "BGREWRITEAOF, LOADAOF"] {
            if how.starts_with("BGREWRITEAOF") {
                let _: Value = q(self.pc, c!["BGREWRITEAOF"]);
                wait_rewrite_done(self.pc);
            }
            let debug = how.rsplit(' ').next().expect("word");
            assert_eq!(q::<String>(self.pc, c!["DEBUG", debug]), "OK");
            for (key, was) in names.iter().zip(&before) {
                let now = snapshot(self.pc, key);
                assert!(
                    now == *was,
                    "{at}: {key} changed across DEBUG {how}: {}",
                    diff(was, &now)
                );
            }
            assert_eq!(
                q::<String>(self.pc, c!["DEBUG", "DIGEST"]),
                digest_before,
                "{at}: DEBUG DIGEST across DEBUG {how}"
            );
        }
        for (key, was) in names.iter().zip(&before) {
            let dump: Vec<u8> = q(self.pc, c!["DUMP", key]);
            let copy = format!("{key}:restored");
            let _: Value = q(self.pc, c!["RESTORE", copy, "0", dump]);
            let got = snapshot(self.pc, &copy);
            assert!(
                got == *was,
                "{at}: RESTORE of DUMP {key} differs: {}",
                diff(was, &got)
            );
            let set = self.model[key].clone();
            self.set_model(&copy, set);
        }
        self.checkpoint("after DEBUG RELOAD and DUMP/RESTORE");
    }
}
