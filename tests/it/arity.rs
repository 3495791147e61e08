//! Each command checks its own argument count. A client's command never
//! reaches a handler with the wrong count (the server checks the arity it
//! was registered with), but loading an AOF runs each command as it is
//! written, without that check (Redis 7.0 to 8.x, Valkey 8.0): a too-short
//! command there must get the server's own arity error, never trip the
//! panic guard. A server that checks arity while loading (Valkey 9.1)
//! refuses such an AOF itself, before any handler runs.

use crate::harness::*;
use redis::{Connection, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A full form of every command of the table; its prefixes shorter than
/// the command's arity are the forms under test.
const FORMS: &[&str] = &[
    "XSET.ADD k m 100",
    "XSET.ADDEX k PXAT MEMBERS 1 m 32503680000000",
    "XSET.HAS k m",
    "XSET.MHAS k m",
    "XSET.MEMBERS k",
    "XSET.REM k none",
    "XSET.CARD k",
    "XSET.COUNT k -inf +inf",
    "XSET.TTL k m",
    "XSET.PTTL k m",
    "XSET.EXPIRETIME k m",
    "XSET.PEXPIRETIME k m",
    "XSET.EXPIRE k 100 none",
    "XSET.PEXPIRE k 100000 none",
    "XSET.EXPIREAT k 32503680000 none",
    "XSET.PEXPIREAT k 32503680000000 none",
    "XSET.PERSIST k none",
    "XSET.SCAN k 0",
    "XSET.RANDMEMBER k",
    "XSET.POP k",
    "XSET.INTER 1 k",
    "XSET.INTERSTORE d 1 k",
    "XSET.INTERCARD 1 k",
    "XSET.UNION 1 k",
    "XSET.UNIONSTORE d 1 k",
    "XSET.DIFF 1 k",
    "XSET.DIFFSTORE d 1 k",
    "XSET.NOTIFY k STREAM s",
    "XSET.DELIVERED k s 1-1 -1 m 1",
];

/// The arity `COMMAND INFO` reports for `command`.
fn arity(c: &mut Connection, command: &str) -> i64 {
    let info: Vec<Value> = q(c, c!["COMMAND", "INFO", command]);
    match info.first() {
        Some(Value::Array(fields)) => match fields.get(1) {
            Some(Value::Int(a)) => *a,
            other => panic!("{command}: arity {other:?}"),
        },
        other => panic!("no COMMAND INFO for {command}: {other:?}"),
    }
}

/// Every form with a wrong argument count: each prefix of a full form
/// shorter than the arity allows, and for an exact arity one word more.
fn wrong_counts(c: &mut Connection) -> Vec<Vec<String>> {
    let listed: Vec<String> = q(c, c!["COMMAND", "LIST", "FILTERBY", "MODULE", "xset"]);
    for command in &listed {
        assert!(
            command.starts_with("xset.debug-")
                || FORMS
                    .iter()
                    .any(|f| f.split(' ').next() == Some(&command.to_ascii_uppercase())),
            "{command} has no form here"
        );
    }
    let mut out = Vec::new();
    for form in FORMS {
        let words: Vec<String> = form.split(' ').map(String::from).collect();
        let arity = arity(c, &words[0]);
        let least = arity.unsigned_abs() as usize;
        assert!(words.len() >= least, "{form} is shorter than its arity");
        for len in 1..least {
            out.push(words[..len].to_vec());
        }
        if arity > 0 {
            let mut longer = words[..least].to_vec();
            longer.push("extra".into());
            out.push(longer);
        }
    }
    out
}

/// `args` as a RESP command, as an AOF holds it.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// A server started on `dir` with `appendonly yes`, killed on drop.
struct Loaded {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a server with the module on the AOF in `dir`: the server, or
/// its log when it refused to start.
fn load_aof(dir: &Path) -> Result<(Loaded, Connection), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let log = dir.join("server.log");
    let child = Command::new(server_bin())
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "yes", "--enable-debug-command", "yes"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(&log)
        .arg("--loadmodule")
        .arg(module_path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server binary");
    let mut server = Loaded { child, port, log };
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).expect("url");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(_)) = server.child.try_wait() {
            return Err(std::fs::read_to_string(&server.log).unwrap_or_default());
        }
        if let Ok(mut c) = client.get_connection()
            && redis::cmd("PING").query::<String>(&mut c).is_ok()
        {
            return Ok((server, c));
        }
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn short_commands_in_an_aof_get_arity_errors_not_panics() {
    let forms = {
        let s = Server::start(&[]);
        wrong_counts(&mut s.conn())
    };
    // An old-style AOF file in an empty directory: every server since 7.0
    // loads it as the base of a new multi-part AOF.
    let dir = std::env::temp_dir().join(format!("xset-arity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let far = "32503680000000";
    let mut aof = Vec::new();
    for key in ["k", "d"] {
        aof.extend(resp(&["XSET.ADDEX", key, "PXAT", "MEMBERS", "1", "m", far]));
    }
    for form in &forms {
        let words: Vec<&str> = form.iter().map(String::as_str).collect();
        aof.extend(resp(&words));
    }
    aof.extend(resp(&["SET", "done", "1"]));
    std::fs::write(dir.join("appendonly.aof"), aof).expect("write the AOF");
    let (s, mut c) = match load_aof(&dir) {
        Ok(up) => up,
        Err(log) => {
            // The server checks arity itself while loading, and refuses
            // the file in its own words: no handler ran.
            assert!(
                log.contains("wrong number of arguments for 'xset.")
                    && !log.contains("a bug was caught"),
                "the server refused the AOF otherwise:\n{log}"
            );
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    };
    assert_eq!(
        q::<String>(&mut c, c!["GET", "done"]),
        "1",
        "loaded to the end"
    );
    let log = std::fs::read_to_string(&s.log).unwrap_or_default();
    let caught: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("a bug was caught"))
        .collect();
    assert!(
        caught.is_empty(),
        "{} of {} short forms tripped the panic guard:\n{}",
        caught.len(),
        forms.len(),
        caught.join("\n")
    );
    assert_eq!(info_i64(&mut c, "xset", "xset_command_panics_caught"), 0);
    // Each got the server's own arity error (the server logs every error a
    // command answers while loading).
    for form in &forms {
        let want = format!(
            "wrong number of arguments for '{}' command",
            form[0].to_ascii_lowercase()
        );
        assert!(log.contains(&want), "{form:?}: no \"{want}\" in the log");
    }
    let errors = log
        .lines()
        .filter(|l| l.contains("wrong number of arguments for 'xset."))
        .count();
    assert_eq!(errors, forms.len(), "one arity error for each form");
    // Nothing changed the keys.
    for key in ["k", "d"] {
        assert_eq!(q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", key]), ["m"]);
    }
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
