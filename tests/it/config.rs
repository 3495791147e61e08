//! Module arguments and `CONFIG SET` as a Redis user expects of a built-in
//! setting: a bad module argument (unknown name, a boolean that is not
//! yes/no, a number out of range or not a number, a name without a value)
//! refuses the load with one log line naming it, at `--loadmodule` and at
//! `MODULE LOAD`; good ones apply; `CONFIG SET` keeps the ranges.

use crate::harness::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BAD: [(&[&str], &str); 7] = [
    (&["active-expire", "maybe"], "active-expire takes yes or no"),
    (
        &["bogus-option", "1"],
        "unknown module argument 'bogus-option'",
    ),
    (
        &["small-max-members", "99999"],
        "small-max-members takes an integer from 0 to 4096",
    ),
    (
        &["small-max-members", "12abc"],
        "small-max-members takes an integer from 0 to 4096",
    ),
    (
        &["active-expire-period-ms", "0"],
        "active-expire-period-ms takes an integer from 1 to 60000",
    ),
    (&["active-expire"], "'active-expire' has no value"),
    (
        &["small-max-members", "8", "notify-expired-members", "on"],
        "notify-expired-members takes yes or no",
    ),
];

/// Starts the server binary with the module and `module_args` on the
/// command line; returns whether it came up, and its log.
fn boot(module_args: &[&str]) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!(
        "xset-config-{}-{}",
        std::process::id(),
        module_args.join("_").replace(['/', ' '], "")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("redis.log");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(server_bin())
        .args(["--bind", "127.0.0.1", "--save", "", "--logfile"])
        .arg(&log)
        .args(["--port", &port.to_string()])
        .arg("--loadmodule")
        .arg(module_path())
        .args(module_args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server binary");
    // A refused module stops the server at start-up; a good one keeps it
    // running until it says it is ready.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut exited = false;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            exited = true;
            break;
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("Ready to accept connections") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (!exited, text)
}

#[test]
fn bad_module_arguments_refuse_the_load_at_startup() {
    for (args, says) in BAD {
        let (up, log) = boot(args);
        assert!(!up, "{args:?} started the server");
        let line = log
            .lines()
            .find(|l| l.contains("xset: refusing to load"))
            .unwrap_or_else(|| panic!("{args:?}: no refusal line in\n{log}"));
        assert!(line.contains(says), "{args:?}: {line}");
    }
    let (up, log) = boot(&["active-expire", "no", "small-max-members", "16"]);
    assert!(up, "good arguments refused:\n{log}");
}

#[test]
fn module_load_at_run_time_checks_arguments_too() {
    // A server without the module, where MODULE LOAD is allowed.
    let path = module_path();
    let path = path.to_str().expect("utf-8 path");
    let dir = std::env::temp_dir().join(format!("xset-config-rt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(server_bin())
        .args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--enable-module-command",
            "yes",
        ])
        .args(["--port", &port.to_string(), "--logfile"])
        .arg(dir.join("redis.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server binary");
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).expect("client");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut c = loop {
        if let Ok(mut conn) = client.get_connection()
            && redis::cmd("PING").query::<String>(&mut conn).is_ok()
        {
            break conn;
        }
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    for (args, says) in BAD {
        let r: redis::RedisResult<String> = redis::cmd("MODULE")
            .arg("LOAD")
            .arg(path)
            .arg(args)
            .query(&mut c);
        assert!(r.is_err(), "{args:?} loaded");
        let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
        assert!(log.contains(says), "{args:?}: log lacks '{says}'");
        // A refused load leaves no hook behind: keyspace events, commands
        // and the event loop still run without calling into the unloaded
        // library.
        let _: () = redis::cmd("SET")
            .arg("probe")
            .arg("v")
            .query(&mut c)
            .expect("SET");
        let _: i64 = redis::cmd("DEL").arg("probe").query(&mut c).expect("DEL");
        let _: String = redis::cmd("PING")
            .query(&mut c)
            .expect("PING after a refused load");
    }
    // Newer servers list built-in modules (Lua): only xset must be absent.
    let modules: redis::Value = redis::cmd("MODULE")
        .arg("LIST")
        .query(&mut c)
        .expect("LIST");
    assert!(
        !format!("{modules:?}").contains("\"xset\""),
        "a refused load left the module: {modules:?}"
    );
    let ok: String = redis::cmd("MODULE")
        .arg("LOAD")
        .arg(path)
        .arg("small-max-members")
        .arg("16")
        .arg("active-expire")
        .arg("no")
        .query(&mut c)
        .expect("good arguments load");
    assert_eq!(ok, "OK");
    let got: Vec<String> = q(&mut c, c!["CONFIG", "GET", "xset.small-max-members"]);
    assert_eq!(got, ["xset.small-max-members", "16"]);
    let got: Vec<String> = q(&mut c, c!["CONFIG", "GET", "xset.active-expire"]);
    assert_eq!(got, ["xset.active-expire", "no"]);
    // CONFIG SET keeps the ranges and the yes/no words.
    for (name, value) in [
        ("xset.small-max-members", "4097"),
        ("xset.active-expire-budget-us", "5"),
        ("xset.active-expire", "maybe"),
    ] {
        assert!(
            try_q::<String>(&mut c, c!["CONFIG", "SET", name, value]).is_err(),
            "CONFIG SET {name} {value} accepted"
        );
    }
    let got: Vec<String> = q(&mut c, c!["CONFIG", "GET", "xset.small-max-members"]);
    assert_eq!(got, ["xset.small-max-members", "16"]);
    drop(c);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A module argument is read as `CONFIG SET` reads the same setting: the
/// spellings it refuses (`+5`, `05`, `-0`, spaces, ...) refuse the load,
/// and those it takes load with the value `CONFIG SET` gives.
#[test]
fn module_arguments_parse_as_config_set_does() {
    let reference = Server::start(&[]);
    let mut c = reference.conn();
    let cases: [(&str, &[&str]); 2] = [
        (
            "small-max-members",
            &[
                "5", "+5", "05", "-0", "0", "00", " 5", "5 ", "0x5", "5.0", "1e2", "", "-", "4096",
                "4097", "-5",
            ],
        ),
        (
            "active-expire",
            &["yes", "YES", "No", "1", "true", "on", "", "yes "],
        ),
    ];
    let mut wrong = Vec::new();
    for (name, values) in cases {
        let setting = format!("xset.{name}");
        for value in values {
            let by_config_set =
                try_q::<String>(&mut c, c!["CONFIG", "SET", setting.as_str(), value]).is_ok();
            if !by_config_set {
                let (up, _) = boot(&[name, value]);
                if up {
                    wrong.push(format!(
                        "{name} {value:?}: CONFIG SET refuses it, the load took it"
                    ));
                }
                continue;
            }
            let want: Vec<String> = q(&mut c, c!["CONFIG", "GET", setting.as_str()]);
            let loaded = Server::start_with_module_args(&[], &[name, value]);
            let got: Vec<String> = q(&mut loaded.conn(), c!["CONFIG", "GET", setting.as_str()]);
            if got != want {
                wrong.push(format!(
                    "{name} {value:?}: loaded as {got:?}, CONFIG SET gave {want:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
