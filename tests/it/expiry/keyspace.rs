//! Active expiry follows keys through the keyspace: RENAME, MOVE, COPY,
//! SWAPDB, RESTORE, reloads and restarts keep each set's due members on
//! the timer's index.

use super::*;

#[test]
fn rename_then_on_time_expiry_under_the_new_name() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let (due, far) = (now + 300, now + FAR_MS);
    add_mixed(&mut c, "src", due, far);
    add_at(&mut c, "whole", &[("a", due), ("b", due)]);
    // Onto an existing xset that was tracked far away.
    add_mixed(&mut c, "over-src", due, far);
    add_at(&mut c, "over-dst", &[("old", far + 1)]);
    // The reverse: a far-only set onto one that had a due member.
    add_at(&mut c, "calm-src", &[("keep", far)]);
    add_mixed(&mut c, "calm-dst", due - 100, far + 5);
    let _: String = q(&mut c, c!["RENAME", "src", "dst"]);
    let _: String = q(&mut c, c!["RENAME", "whole", "whole2"]);
    let _: String = q(&mut c, c!["RENAME", "over-src", "over-dst"]);
    let _: String = q(&mut c, c!["RENAME", "calm-src", "calm-dst"]);
    assert_eq!(tracked(&mut c), 4);

    expect_reclaimed_on_time(&s, &mut c, "whole2", due);
    wait_active(&s, &mut c, 4);
    assert!(!exists(&mut c, "src") && !exists(&mut c, "whole"));
    assert_eq!(lazy(&mut c), 0);
    expect_only_keep(&mut c, "dst", far);
    expect_only_keep(&mut c, "over-dst", far);
    expect_only_keep(&mut c, "calm-dst", far);
    assert_eq!(active(&mut c), 4, "calm-dst's old due member left with it");
    assert_eq!(lazy(&mut c), 0);
}

#[test]
fn move_then_on_time_expiry_in_the_new_db() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut c1 = conn_db(&s, 1);
    let now = server_ms(&mut c);
    let (due, far) = (now + 300, now + FAR_MS);
    add_mixed(&mut c, "m", due, far);
    add_at(&mut c, "whole", &[("a", due)]);
    add_mixed(&mut c, "stay", due + 50, far);
    assert_eq!(q::<i64>(&mut c, c!["MOVE", "m", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["MOVE", "whole", "1"]), 1);
    assert_eq!(tracked(&mut c), 3);
    expect_reclaimed_on_time(&s, &mut c1, "whole", due);
    wait_active(&s, &mut c, 3);
    assert!(!exists(&mut c, "m") && !exists(&mut c, "whole"));
    expect_only_keep(&mut c1, "m", far);
    expect_only_keep(&mut c, "stay", far);
    assert_eq!(lazy(&mut c), 0);
}

#[test]
fn copy_then_on_time_expiry_of_source_and_copies() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut c2 = conn_db(&s, 2);
    let now = server_ms(&mut c);
    let (due, far) = (now + 300, now + FAR_MS);
    add_mixed(&mut c, "orig", due, far);
    add_at(&mut c, "whole", &[("a", due), ("b", due)]);
    assert_eq!(q::<i64>(&mut c, c!["COPY", "orig", "copy"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["COPY", "orig", "copy", "DB", "2"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["COPY", "whole", "whole-copy"]), 1);
    assert_eq!(
        q::<i64>(&mut c, c!["COPY", "whole", "whole-copy", "DB", "2"]),
        1
    );
    // REPLACE onto an xset tracked far away.
    add_at(&mut c, "target", &[("old", far + 3)]);
    assert_eq!(q::<i64>(&mut c, c!["COPY", "orig", "target", "REPLACE"]), 1);
    assert_eq!(tracked(&mut c), 7);
    expect_reclaimed_on_time(&s, &mut c, "whole-copy", due);
    expect_reclaimed_on_time(&s, &mut c2, "whole-copy", due);
    expect_reclaimed_on_time(&s, &mut c, "whole", due);
    wait_active(&s, &mut c, 4 + 6);
    expect_only_keep(&mut c, "orig", far);
    expect_only_keep(&mut c, "copy", far);
    expect_only_keep(&mut c2, "copy", far);
    expect_only_keep(&mut c, "target", far);
    assert_eq!(lazy(&mut c), 0);
}

#[test]
fn swapdb_then_on_time_expiry_in_both_dbs() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut c1 = conn_db(&s, 1);
    let now = server_ms(&mut c);
    let (due, far) = (now + 300, now + FAR_MS);
    add_at(&mut c, "zero", &[("a", due)]);
    add_at(&mut c1, "one", &[("a", due + 20)]);
    // The same name in both, with different contents.
    add_at(&mut c, "same", &[("a", due + 40)]);
    add_mixed(&mut c1, "same", due + 60, far);
    let _: String = q(&mut c, c!["SWAPDB", "0", "1"]);
    assert!(exists(&mut c, "one") && exists(&mut c1, "zero"));
    expect_reclaimed_on_time(&s, &mut c1, "zero", due);
    expect_reclaimed_on_time(&s, &mut c, "one", due + 20);
    expect_reclaimed_on_time(&s, &mut c1, "same", due + 40);
    wait_active(&s, &mut c, 4);
    expect_only_keep(&mut c, "same", far);
    assert_eq!(dbsize(&mut c), 1);
    assert_eq!(dbsize(&mut c1), 0);
    assert_eq!(lazy(&mut c), 0);
}

#[test]
fn restore_then_on_time_expiry_under_the_new_name() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let (due, far) = (now + 400, now + FAR_MS);
    add_mixed(&mut c, "orig", due, far);
    add_at(&mut c, "whole", &[("a", due), ("b", due)]);
    add_at(&mut c, "victim", &[("old", far + 7)]);
    let mixed: Vec<u8> = q(&mut c, c!["DUMP", "orig"]);
    let whole: Vec<u8> = q(&mut c, c!["DUMP", "whole"]);
    assert_eq!(q::<i64>(&mut c, c!["DEL", "orig", "whole"]), 2);
    let _: String = q(&mut c, &[b"RESTORE", b"new", b"0", &mixed]);
    let _: String = q(&mut c, &[b"RESTORE", b"victim", b"0", &mixed, b"REPLACE"]);
    let _: String = q(&mut c, &[b"RESTORE", b"whole2", b"0", &whole]);
    assert_eq!(tracked(&mut c), 3);
    expect_reclaimed_on_time(&s, &mut c, "whole2", due);
    wait_active(&s, &mut c, 4);
    expect_only_keep(&mut c, "new", far);
    expect_only_keep(&mut c, "victim", far);
    assert_eq!(dbsize(&mut c), 2);
    assert_eq!(lazy(&mut c), 0);
}

/// `RESTORE ... REPLACE` of a key by its own dump: the new value is loaded
/// (and tracked) before the old one is deleted (and untracked), with the
/// same earliest deadline; the key must still be tracked afterwards.
#[test]
fn restore_replace_by_its_own_dump_stays_tracked() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let due = server_ms(&mut c) + 400;
    add_at(&mut c, "self", &[("a", due), ("b", due)]);
    let dump: Vec<u8> = q(&mut c, c!["DUMP", "self"]);
    let _: String = q(&mut c, &[b"RESTORE", b"self", b"0", &dump, b"REPLACE"]);
    assert_eq!(tracked(&mut c), 1);
    expect_reclaimed_on_time(&s, &mut c, "self", due);
    assert_eq!(lazy(&mut c), 0);
}

#[test]
fn debug_reload_then_on_time_expiry() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut c3 = conn_db(&s, 3);
    let now = server_ms(&mut c);
    let (due, far) = (now + 400, now + FAR_MS);
    add_mixed(&mut c, "k", due, far);
    add_at(&mut c, "whole", &[("a", due), ("b", due)]);
    add_at(&mut c3, "db3", &[("a", due + 30)]);
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    assert_eq!(dbsize(&mut c), 2);
    assert_eq!(tracked(&mut c), 3, "loading re-tracks every key");
    expect_reclaimed_on_time(&s, &mut c, "whole", due);
    expect_reclaimed_on_time(&s, &mut c3, "db3", due + 30);
    assert!(wait_until(GRACE, || active(&mut c) == 4));
    expect_only_keep(&mut c, "k", far);
    assert_eq!(lazy(&mut c), 0);
}

#[test]
fn restart_from_rdb_then_on_time_expiry() {
    let s = Server::start(&["--save", ""]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let far = now + FAR_MS;
    // Due while the server is down.
    let past = now + 100;
    add_at(&mut c, "past", &[("a", past), ("b", past)]);
    // Due after the restart.
    let later = now + 900;
    add_mixed(&mut c, "later", later, far);
    let mut c1 = conn_db(&s, 1);
    add_at(&mut c1, "later1", &[("a", later)]);
    assert_eq!(q::<String>(&mut c, c!["SAVE"]), "OK");
    drop(c);
    drop(c1);
    let dir = s.shutdown("NOSAVE");
    assert!(dir.join("dump.rdb").exists(), "SAVE wrote no dump.rdb");
    while unix_ms() <= past + 20 {
        sleep(Duration::from_millis(10));
    }
    let dir_arg = dir.to_string_lossy().into_owned();
    let s2 = Server::start(&["--dir", &dir_arg]);
    let mut c = s2.conn();
    let mut c1 = conn_db(&s2, 1);
    let log = s2.log();
    assert!(
        log.contains("keys loaded: 3"),
        "the restarted server did not load the RDB:\n{log}"
    );
    let ok = wait_until(GRACE, || !exists(&mut c, "past"));
    assert!(ok, "a set due during the downtime was not reclaimed");
    assert!(exists(&mut c, "later"), "later is not due yet");
    expect_reclaimed_on_time(&s2, &mut c1, "later1", later);
    assert!(
        wait_until(GRACE, || active(&mut c) == 4),
        "active={}; log:\n{}",
        active(&mut c),
        log_tail(&s2)
    );
    expect_only_keep(&mut c, "later", far);
    assert_eq!(lazy(&mut c), 0);
    drop(s2);
    let _ = std::fs::remove_dir_all(&dir);
}
