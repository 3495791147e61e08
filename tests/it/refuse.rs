//! A server older than Redis 7.0 refuses the module cleanly: the load fails
//! with a log line that says why (the 7.0 API it lacks), and the server is
//! never taken down by the attempt. At start (`--loadmodule`) the server
//! exits with an error status, not a signal; at run time (`MODULE LOAD`)
//! the command fails and the server keeps serving.
//!
//! The old server is the binary in `XSET_OLD_SERVER` (`scripts/test
//! --matrix` sets it to Redis 6.2 from `scripts/servers path redis-6.2`).
//! Without it these tests say so on stderr and check nothing.

use crate::harness::*;
use redis::{Connection, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The old server's binary, or `None` (after saying so) when the
/// environment names none.
fn old_server(test: &str) -> Option<String> {
    match std::env::var("XSET_OLD_SERVER") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            // Straight to the process's stderr: libtest captures eprintln!.
            let _ = writeln!(
                std::io::stderr(),
                "refuse::{test}: skipped, XSET_OLD_SERVER is not set \
                 (scripts/test --matrix sets it to Redis 6.2)"
            );
            None
        }
    }
}

/// An old server process, its log and stderr in a directory of its own;
/// killed and cleaned on drop.
struct Old {
    port: u16,
    dir: PathBuf,
    child: Child,
}

impl Old {
    fn spawn(bin: &str, name: &str, extra: &[&std::ffi::OsStr]) -> Old {
        let dir = std::env::temp_dir().join(format!("xset-refuse-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let port = free_port();
        let stderr = std::fs::File::create(dir.join("stderr")).expect("stderr file");
        let child = Command::new(bin)
            .arg("--port")
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(["--loglevel", "notice", "--logfile"])
            .arg(dir.join("redis.log"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin} ({e}): XSET_OLD_SERVER names it"));
        Old { port, dir, child }
    }

    /// The server's log (a crash report cut to its first lines) and the
    /// start of what it wrote on stderr (a Rust panic message lands there),
    /// after an empty line (`scripts/test --matrix` summarizes a failure by
    /// its message up to the first empty line).
    fn output(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        let log = read("redis.log");
        let lines: Vec<&str> = log.lines().collect();
        let shown = match lines.iter().position(|l| l.contains("BUG REPORT START")) {
            Some(at) => {
                let end = (at + 3).min(lines.len());
                format!(
                    "{}\n[... {} more lines of crash report]",
                    lines[..end].join("\n"),
                    lines.len() - end
                )
            }
            None => log.clone(),
        };
        let stderr = read("stderr");
        let stderr: Vec<&str> = stderr.lines().take(4).collect();
        format!(
            "\n--- log ---\n{shown}\n--- stderr (start) ---\n{}",
            stderr.join("\n")
        )
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// Waits up to `timeout` for the process to exit.
    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn try_conn(&self) -> redis::RedisResult<Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?
            .get_connection_with_timeout(Duration::from_secs(5))
    }

    /// Waits until the server answers `PING`; panics if it exits or never
    /// answers.
    fn wait_ready(&mut self) -> Connection {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the old server exited ({status}) before answering:\n{}",
                    self.output()
                );
            }
            if let Ok(mut c) = self.try_conn()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "the old server never answered PING:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Old {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The log line in which the module says why it refuses: it names xset,
/// the version it needs and an API the server lacks (the server's own
/// lines about the module's path do not count).
fn refusal_line(log: &str) -> Option<String> {
    let path = module_path().display().to_string();
    log.lines()
        .map(|l| l.replace(&path, "<module>"))
        .find(|l| l.contains("xset") && l.contains("7.0") && l.contains("RedisModule_"))
}

/// Whether the server wrote a crash report (an abort, a segfault).
fn crashed(log: &str) -> bool {
    log.contains("BUG REPORT") || log.contains("crashed by signal")
}

fn module_arg() -> PathBuf {
    let m = module_path();
    assert!(m.is_absolute(), "{}", m.display());
    m
}

#[test]
fn loadmodule_at_start_exits_with_an_error_status_and_says_why() {
    let Some(bin) = old_server("loadmodule_at_start_exits_with_an_error_status_and_says_why")
    else {
        return;
    };
    let module = module_arg();
    let mut s = Old::spawn(
        &bin,
        "start",
        &["--loadmodule".as_ref(), module.as_os_str()],
    );
    let Some(status) = s.wait_exit(Duration::from_secs(10)) else {
        let answers = s
            .try_conn()
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok();
        panic!(
            "{bin} is still running 10 s after --loadmodule xset (answers PING: {answers}): \
             it must refuse the module and exit\n{}",
            s.output()
        );
    };
    let out = s.output();
    assert!(
        status.code().is_some_and(|c| c != 0),
        "{bin} --loadmodule xset must exit with an error status, not {status} \
         (a signal, such as the SIGABRT a shell shows as 134, means the load crashed the server)\n{out}"
    );
    let log = s.log();
    assert!(!crashed(&log), "a crash report in the log:\n{out}");
    assert!(
        refusal_line(&log).is_some(),
        "no log line from xset naming Redis 7.0 and the missing API:\n{out}"
    );
}

#[test]
fn module_load_at_run_time_fails_and_the_server_keeps_serving() {
    let Some(bin) = old_server("module_load_at_run_time_fails_and_the_server_keeps_serving") else {
        return;
    };
    let module = module_arg();
    // 7.0 added enable-module-command; older servers allow MODULE LOAD.
    let mut s = Old::spawn(&bin, "runtime", &[]);
    let mut c = s.wait_ready();
    let _: String = q(&mut c, c!["SET", "before", "1"]);
    let path = module.to_str().expect("a UTF-8 module path");
    // Twice: a first refusal must leave nothing behind that breaks the
    // second (a data type left registered, a half-freed module).
    for attempt in 1..=2 {
        let reply: redis::RedisResult<Value> =
            redis::cmd("MODULE").arg("LOAD").arg(path).query(&mut c);
        match reply {
            // An error reply has a code (`ERR ...`); a dropped connection
            // has none.
            Err(e) if e.code().is_some() => {}
            other => {
                let exit = s.wait_exit(Duration::from_secs(5));
                panic!(
                    "MODULE LOAD xset, attempt {attempt}: want an error reply, got {other:?}; \
                     the server {}\n{}",
                    exit.map_or("is still running".to_string(), |e| format!("exited: {e}")),
                    s.output()
                )
            }
        }
        let pong: String = redis::cmd("PING").query(&mut c).unwrap_or_else(|e| {
            panic!(
                "PING after MODULE LOAD (attempt {attempt}): {e}\n{}",
                s.output()
            )
        });
        assert_eq!(pong, "PONG");
    }
    // It still serves data, and nothing of xset stayed registered.
    assert_eq!(q::<String>(&mut c, c!["GET", "before"]), "1");
    let _: String = q(&mut c, c!["SET", "after", "2"]);
    assert_eq!(q::<i64>(&mut c, c!["DBSIZE"]), 2);
    let modules: Vec<Value> = q(&mut c, c!["MODULE", "LIST"]);
    assert!(modules.is_empty(), "modules loaded: {modules:?}");
    let mut other = s.try_conn().expect("a new connection after the refusals");
    assert_eq!(q::<String>(&mut other, c!["PING"]), "PONG");
    let log = s.log();
    assert!(!crashed(&log), "a crash report in the log:\n{}", s.output());
    assert!(
        refusal_line(&log).is_some(),
        "no log line from xset naming Redis 7.0 and the missing API:\n{}",
        s.output()
    );
    assert!(
        s.child.try_wait().ok().flatten().is_none(),
        "the server exited\n{}",
        s.output()
    );
}
