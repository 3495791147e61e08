//! Test harness: a real `redis-server` per test, on a free loopback port,
//! with the built module loaded. Never a mock.
//!
//! The module is the path in `XSET_MODULE`, else `libxset.so` in the
//! release directory of `CARGO_TARGET_DIR`, else `target/release/` under the
//! source tree, built with the `fault-injection` feature (`scripts/test`
//! builds it).
//!
//! The server is `redis-server` from `PATH`, or the binary in
//! `XSET_SERVER` (any Redis or Valkey server: `scripts/test --matrix` runs
//! the integration tests once per server that `scripts/servers` provides).

use redis::{Connection, FromRedisValue, PubSub, RedisResult, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The module under test, as an absolute path (see the file's header for
/// where it is looked for).
pub fn module_path() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if let Some(p) = std::env::var_os("XSET_MODULE").filter(|p| !p.is_empty()) {
        return manifest.join(p);
    }
    // A relative CARGO_TARGET_DIR is taken from where cargo ran; tests run
    // in the package root, where it is usually run from.
    let p = match std::env::var_os("CARGO_TARGET_DIR").filter(|p| !p.is_empty()) {
        Some(dir) => std::env::current_dir()
            .expect("current directory")
            .join(dir)
            .join("release/libxset.so"),
        None => manifest.join("target/release/libxset.so"),
    };
    assert!(
        p.exists(),
        "{} is missing: run scripts/test, or cargo build --release --features \
         fault-injection (or name the module in XSET_MODULE)",
        p.display()
    );
    p
}

/// A free loopback port (free when probed; a server started on it may
/// still lose a race for it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A free port whose cluster bus port (port + 10000) is free too.
fn free_cluster_port() -> u16 {
    for _ in 0..1000 {
        let p = free_port();
        if p < 55_000 && TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
            return p;
        }
    }
    panic!("no free port pair for a cluster node");
}

/// The server binary: `XSET_SERVER`, or `redis-server` on `PATH`.
pub fn server_bin() -> String {
    match std::env::var("XSET_SERVER") {
        Ok(p) if !p.is_empty() => p,
        _ => "redis-server".to_string(),
    }
}

/// How long a server may take to answer its first `PING`.
const READY_WITHIN: Duration = Duration::from_secs(10);

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A running `redis-server` with xset loaded; killed and cleaned on drop.
pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
}

impl Server {
    /// Starts a server with the module and `extra` configuration
    /// arguments (`["--appendonly", "yes"]`, ...).
    pub fn start(extra: &[&str]) -> Server {
        Self::start_with_module_args(extra, &[])
    }

    /// As [`Server::start`], passing `module_args` to the module.
    pub fn start_with_module_args(extra: &[&str], module_args: &[&str]) -> Server {
        Self::spawn(extra, Some(module_args), free_port, &[], READY_WITHIN)
    }

    /// As [`Server::start`], the server run by `wrapper` (a tool and its
    /// options, say valgrind's), which may take up to `ready_within` to
    /// answer.
    pub fn start_under(wrapper: &[String], extra: &[&str], ready_within: Duration) -> Server {
        Self::spawn(extra, Some(&[]), free_port, wrapper, ready_within)
    }

    /// A Redis Cluster node (`cluster-enabled yes`) with the module.
    pub fn start_cluster_node(extra: &[&str]) -> Server {
        let mut args = vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"];
        args.extend_from_slice(extra);
        Self::spawn(&args, Some(&[]), free_cluster_port, &[], READY_WITHIN)
    }

    /// A server without the module, which a test loads with `MODULE LOAD`
    /// ([`module_path`]).
    pub fn start_without_module(extra: &[&str]) -> Server {
        Self::spawn(extra, None, free_port, &[], READY_WITHIN)
    }

    /// Starts a server; `module_args` is `None` for a server without the
    /// module.
    fn spawn(
        extra: &[&str],
        module_args: Option<&[&str]>,
        pick_port: fn() -> u16,
        wrapper: &[String],
        ready_within: Duration,
    ) -> Server {
        let dir = std::env::temp_dir().join(format!(
            "xset-test-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let module = module_path();
        for _attempt in 0..5 {
            let port = pick_port();
            let mut cmd = match wrapper.split_first() {
                Some((tool, options)) => {
                    let mut cmd = Command::new(tool);
                    cmd.args(options).arg(server_bin());
                    cmd
                }
                None => Command::new(server_bin()),
            };
            cmd.arg("--port")
                .arg(port.to_string())
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&dir)
                .args(["--enable-debug-command", "yes", "--loglevel", "notice"])
                .arg("--logfile")
                .arg(dir.join("redis.log"))
                .args(module_args.map_or(vec![], |a| {
                    let mut load = vec!["--loadmodule", module.to_str().expect("utf-8 path")];
                    load.extend_from_slice(a);
                    load
                }))
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}): scripts/test installs redis-server; \
                     XSET_SERVER names another server binary",
                    server_bin()
                )
            });
            let mut server = Server {
                port,
                dir: dir.clone(),
                child,
            };
            if server.wait_ready(ready_within) {
                return server;
            }
            // The port was taken between probing and binding, or the
            // server failed: try again on another port, in the same
            // directory (which this attempt's drop must not remove).
            let _ = server.child.kill();
            let _ = server.child.wait();
            server.dir = PathBuf::new();
        }
        panic!("{} did not start; log:\n{}", server_bin(), read_log(&dir));
    }

    fn wait_ready(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            // The answer must come from this child: another test's server
            // may hold the port if two threads drew the same free port, and
            // this child then exits on the bind while that one answers.
            if let Ok(mut c) = self.try_conn()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
                && let Ok(info) = redis::cmd("INFO").arg("server").query::<String>(&mut c)
            {
                return info
                    .lines()
                    .find_map(|l| l.strip_prefix("process_id:"))
                    .and_then(|p| p.trim().parse::<u32>().ok())
                    == Some(self.child.id());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn try_conn(&self) -> RedisResult<Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?
            .get_connection_with_timeout(Duration::from_secs(5))
    }

    /// A new connection to this server.
    pub fn conn(&self) -> Connection {
        self.try_conn().expect("connect to the test server")
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log(&self) -> String {
        read_log(&self.dir)
    }

    /// Stops the server (SHUTDOWN with `save_mode`, e.g. "NOSAVE" or
    /// "SAVE") and waits for it to exit; the directory stays.
    pub fn shutdown(mut self, save_mode: &str) -> PathBuf {
        if let Ok(mut c) = self.try_conn() {
            let _: RedisResult<Value> = redis::cmd("SHUTDOWN").arg(save_mode).query(&mut c);
        }
        let _ = self.child.wait();
        let dir = self.dir.clone();
        // Keep the directory for the caller; Drop only kills.
        self.dir = PathBuf::new();
        dir
    }
}

fn read_log(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs a command built from `args` and converts the reply.
pub fn q<T: FromRedisValue>(c: &mut Connection, args: &[&[u8]]) -> T {
    try_q(c, args).unwrap_or_else(|e| panic!("{:?} failed: {e}", show(args)))
}

/// Runs a command and returns the reply or the error.
pub fn try_q<T: FromRedisValue>(c: &mut Connection, args: &[&[u8]]) -> RedisResult<T> {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).expect("command name"));
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
}

/// Runs a command that must fail and returns its full error line
/// (`CODE detail`).
pub fn err(c: &mut Connection, args: &[&[u8]]) -> String {
    match try_q::<Value>(c, args) {
        Ok(v) => panic!("{:?} should fail, replied {v:?}", show(args)),
        Err(e) => match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_string(),
            _ => e.to_string(),
        },
    }
}

fn show(args: &[&[u8]]) -> Vec<String> {
    args.iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Shorthand: a command from string words.
macro_rules! c {
    ($($a:expr),+ $(,)?) => { &[$(AsRef::<[u8]>::as_ref(&$a)),+][..] };
}
pub(crate) use c;

/// The server's clock in Unix milliseconds (from `TIME`).
pub fn server_ms(c: &mut Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(c).expect("TIME");
    s * 1000 + us / 1000
}

/// `redis-cli args...`, which must succeed (`redis-cli --cluster` prints
/// its errors on stdout: both are shown).
pub fn redis_cli(args: &[&str]) {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("redis-cli");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `nodes` cluster nodes with the module, made one cluster by `redis-cli
/// --cluster create` with `replicas` replicas a primary, every node at
/// `cluster_state:ok`.
pub fn start_cluster(nodes: usize, replicas: usize) -> Vec<Server> {
    let servers: Vec<Server> = (0..nodes)
        .map(|_| Server::start_cluster_node(&[]))
        .collect();
    let addrs: Vec<String> = servers
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let replicas = replicas.to_string();
    let mut create = vec!["--cluster", "create"];
    create.extend(addrs.iter().map(String::as_str));
    create.extend(["--cluster-replicas", replicas.as_str(), "--cluster-yes"]);
    redis_cli(&create);
    for n in &servers {
        wait_until("cluster_state:ok", Duration::from_secs(20), || {
            cluster_ok(n.port)
        });
    }
    servers
}

/// Whether the cluster node on `port` reports `cluster_state:ok`.
pub fn cluster_ok(port: u16) -> bool {
    let Ok(mut c) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
    else {
        return false;
    };
    q::<String>(&mut c, c!["CLUSTER", "INFO"]).contains("cluster_state:ok")
}

/// The module's internal commands (`INTERNAL` in src/commands/mod.rs,
/// whose unit test `the_harness_names_every_internal_command` checks this
/// list): registered, but refused to clients and left out of the command
/// reference.
pub const INTERNAL_COMMANDS: &[&str] = &["xset.delivered"];

/// Whether the command reference (`docs/commands/`) documents `command`:
/// every registered command but the internal ones and the test builds'
/// `xset.debug-*`.
pub fn in_reference(command: &str) -> bool {
    !command.starts_with("xset.debug-")
        && !INTERNAL_COMMANDS
            .iter()
            .any(|c| c.eq_ignore_ascii_case(command))
}

/// A fresh directory for a test's files, named after `name` and unique in
/// this run, that outlives the servers started in it ([`start_in`]): the
/// test removes it.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "xset-scratch-{}-{}-{name}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A server whose files (RDB, AOF) are in `dir`, with `extra` arguments:
/// stopping it (or a `SIGKILL`, on drop) leaves them for the next one.
pub fn start_in(dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut args = vec!["--dir", dir.to_str().expect("utf-8 dir")];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// The text of the AOF file in `dir`'s `appendonlydir` whose name ends
/// with `ending` (`.base.aof`, `.incr.aof`), bytes that are not UTF-8
/// replaced.
pub fn aof_part(dir: &std::path::Path, ending: &str) -> String {
    let file = std::fs::read_dir(dir.join("appendonlydir"))
        .expect("appendonlydir")
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(ending))
        .unwrap_or_else(|| panic!("no AOF file ending in {ending}"));
    let bytes = std::fs::read(file.path()).expect("read the AOF");
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Waits until no AOF rewrite is running or scheduled.
pub fn wait_rewrite_done(c: &mut Connection) {
    wait_until("the AOF rewrite", Duration::from_secs(20), || {
        let info: String = q(c, c!["INFO", "persistence"]);
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    });
}

/// Polls `ok` until it holds; fails the test, naming `what`, after
/// `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the server's clock (`TIME`) is past `at_ms`: a member or
/// key due by then is expired for the server's next command. Reads no key,
/// so nothing is reclaimed by the wait.
pub fn wait_past(c: &mut Connection, at_ms: u64) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let now = server_ms(c);
        if now > at_ms {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "the server's clock stays at {now}, not past {at_ms}"
        );
        std::thread::sleep(Duration::from_millis((at_ms + 1 - now).min(20)));
    }
}

/// Waits until a TTL of `ttl_ms` set by a command already answered has run
/// out on the server's clock (its deadline is at most `ttl_ms` from now);
/// reads no key.
pub fn wait_ttl_out(c: &mut Connection, ttl_ms: u64) {
    let at = server_ms(c) + ttl_ms;
    wait_past(c, at);
}

/// Adds `member` to `key` with the absolute deadline `at_ms`
/// (`XSET.ADDEX key PXAT MEMBERS 1 member at_ms`; also inside `MULTI`).
pub fn add_at(c: &mut Connection, key: &str, member: &str, at_ms: u64) {
    let at = at_ms.to_string();
    q::<Value>(
        c,
        c![
            "XSET.ADDEX",
            key,
            "PXAT",
            "MEMBERS",
            "1",
            member,
            at.as_str()
        ],
    );
}

/// Members with their PTTL from `XSET.MEMBERS key WITHTTL`.
pub fn members_with_ttl(c: &mut Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    let flat: Vec<Value> = q(c, c!["XSET.MEMBERS", key, "WITHTTL"]);
    flat.chunks(2)
        .map(|p| {
            let m: Vec<u8> = FromRedisValue::from_redis_value(p[0].clone()).expect("member");
            let t: i64 = FromRedisValue::from_redis_value(p[1].clone()).expect("ttl");
            (m, t)
        })
        .collect()
}

/// Sorted `(member, absolute deadline)` of a key, from `XSET.SCAN` and
/// `XSET.PEXPIRETIME`: the exact state to compare across servers. A member
/// a scan returns twice (SCAN allows it) is listed once, and the deadlines
/// are read a thousand members a call, so that sets of thousands of
/// members on two servers are read in a few round trips.
pub fn snapshot(c: &mut Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    let mut members = std::collections::BTreeSet::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, batch): (String, Vec<Vec<u8>>) =
            q(c, c!["XSET.SCAN", key, cursor.as_str(), "COUNT", "1000"]);
        members.extend(batch);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let members: Vec<Vec<u8>> = members.into_iter().collect();
    let mut out = Vec::with_capacity(members.len());
    for chunk in members.chunks(1000) {
        let n = chunk.len().to_string();
        let mut args: Vec<&[u8]> = vec![
            b"XSET.PEXPIRETIME".as_slice(),
            key.as_bytes(),
            b"MEMBERS".as_slice(),
            n.as_bytes(),
        ];
        args.extend(chunk.iter().map(|m| m.as_slice()));
        let times: Vec<i64> = q(c, &args);
        out.extend(chunk.iter().cloned().zip(times));
    }
    out
}

/// An integer field of an `INFO` section.
pub fn info_i64(c: &mut Connection, section: &str, field: &str) -> i64 {
    let info: String = q(c, c!["INFO", section]);
    info_text_i64(&info, field).unwrap_or_else(|| panic!("INFO {section} has no integer {field}"))
}

/// An integer field of an `INFO` reply's text (say, one read inside a
/// transaction).
pub fn info_text_i64(info: &str, field: &str) -> Option<i64> {
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

/// The channel that [`drain`] publishes on to mark the end of its read.
const DRAINED: &str = "xset-test:drained";

/// Subscribes `ps` to the channels matching `pattern` (`PSUBSCRIBE`), and
/// to the one [`drain`] reads up to.
pub fn listen(ps: &mut PubSub, pattern: &str) {
    ps.psubscribe(pattern).expect("psubscribe");
    ps.subscribe(DRAINED).expect("subscribe");
    ps.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
}

/// Every (channel, payload) published so far to what `ps` [`listen`]s to,
/// in order: publishes a marker through `c` and reads up to it. The server
/// delivers messages in the order it publishes them, and a command's events
/// before its reply, so nothing published before is missed and nothing
/// after is waited for.
pub fn drain(ps: &mut PubSub, c: &mut Connection) -> Vec<(String, Vec<u8>)> {
    q::<i64>(c, c!["PUBLISH", DRAINED, "end"]);
    let mut out = Vec::new();
    loop {
        let m = ps.get_message().expect("a message before the marker");
        let channel = m.get_channel_name().to_string();
        if channel == DRAINED {
            return out;
        }
        out.push((channel, m.get_payload_bytes().to_vec()));
    }
}

/// `words` as one RESP command.
pub fn resp(words: &[&str]) -> String {
    let mut out = format!("*{}\r\n", words.len());
    for w in words {
        out.push_str(&format!("${}\r\n{w}\r\n", w.len()));
    }
    out
}

/// Waits until the server at `port` has read everything the client at
/// local port `client` sent it (its socket's receive queue is empty in
/// /proc/net/tcp): the server has then taken in the commands, run them or
/// held them back (a pause).
pub fn wait_read_by_server(port: u16, client: u16) {
    let hex = |p: u16| format!("0100007F:{p:04X}");
    let (ours, theirs) = (hex(port), hex(client));
    wait_until("the server to read", Duration::from_secs(10), || {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        table.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 4 && f[1] == ours && f[2] == theirs && f[4].ends_with(":00000000")
        })
    });
}

/// A fake replica: performs a full sync, skips the RDB, then yields each
/// propagated command.
pub struct ReplStream {
    r: BufReader<TcpStream>,
}

impl ReplStream {
    pub fn connect(port: u16) -> ReplStream {
        Self::connect_as(port, "PSYNC")
    }

    /// As [`ReplStream::connect`], the server's `PSYNC` called `psync`
    /// (`rename-command`).
    pub fn connect_as(port: u16, psync: &str) -> ReplStream {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        Self::full_sync(s, psync)
    }

    /// Performs a full sync on `s` with the command `psync` and skips the
    /// RDB.
    pub fn full_sync(s: TcpStream, psync: &str) -> ReplStream {
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut r = BufReader::new(s);
        r.get_mut()
            .write_all(resp(&[psync, "?", "-1"]).as_bytes())
            .expect("psync");
        // `+FULLRESYNC`, then the RDB's length; a server that does not
        // know the command by the name `PSYNC` (`rename-command`) answers
        // it as `SYNC`: the length at once. Empty lines keep the link alive.
        let mut line = String::new();
        while line.trim().is_empty() || line.starts_with("+FULLRESYNC") {
            line.clear();
            r.read_line(&mut line).expect("reply");
        }
        let len: usize = line.trim()[1..]
            .parse()
            .expect("disk-based sync gives a length");
        let mut rdb = vec![0; len];
        r.read_exact(&mut rdb).expect("rdb");
        ReplStream { r }
    }

    /// A fake replica that resumes replication stream `replid` at byte
    /// `offset` (a partial resync): it reads what the primary's backlog
    /// holds from there on.
    pub fn resume(port: u16, replid: &str, offset: i64) -> ReplStream {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut r = BufReader::new(s);
        let offset = offset.to_string();
        let psync = resp(&["PSYNC", replid, &offset]);
        r.get_mut().write_all(psync.as_bytes()).expect("psync");
        let mut line = String::new();
        r.read_line(&mut line).expect("reply");
        assert!(line.starts_with("+CONTINUE"), "a partial resync: {line}");
        ReplStream { r }
    }

    fn read_bulk(&mut self) -> Vec<u8> {
        let mut line = String::new();
        self.r.read_line(&mut line).expect("bulk header");
        let len: usize = line.trim()[1..].parse().expect("bulk length");
        let mut buf = vec![0; len + 2];
        self.r.read_exact(&mut buf).expect("bulk");
        buf.truncate(len);
        buf
    }

    /// The next propagated command other than PING and SELECT, as words,
    /// its name upper-cased.
    pub fn next(&mut self) -> Vec<String> {
        loop {
            let mut line = String::new();
            self.r.read_line(&mut line).expect("array header");
            let n: usize = line.trim()[1..].parse().expect("array length");
            let mut words: Vec<String> = (0..n)
                .map(|_| String::from_utf8_lossy(&self.read_bulk()).into_owned())
                .collect();
            words[0] = words[0].to_ascii_uppercase();
            if words[0] != "PING" && words[0] != "SELECT" {
                return words;
            }
        }
    }

    /// Asserts that the next commands are exactly `want` (after
    /// upper-casing command names), then the marker SET.
    pub fn expect(&mut self, want: &[&[&str]]) {
        for w in want {
            let mut got = self.next();
            got[0] = got[0].to_ascii_uppercase();
            assert_eq!(got, w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        }
    }
}

/// Writes a marker and checks it is the next thing propagated: nothing
/// else was.
pub fn marker(c: &mut Connection, s: &mut ReplStream, n: u32) {
    q::<String>(c, c!["SET", "marker", n.to_string()]);
    assert_eq!(
        s.next(),
        vec!["SET".to_string(), "marker".into(), n.to_string()],
        "nothing else propagated"
    );
}

/// Starts a primary for replication tests: disk-based full syncs without
/// delay (a raw [`ReplStream`] reads its RDB), active expiry off.
pub fn replication_primary() -> Server {
    Server::start_with_module_args(
        &[
            "--repl-diskless-sync",
            "no",
            "--repl-diskless-sync-delay",
            "0",
        ],
        &["active-expire", "no"],
    )
}

/// Waits until the replica reports its link up and the primary counts it
/// as `online` (`WAIT` counts only online replicas). How long a first sync
/// takes depends on the server: Valkey 9.1 notices a finished RDB download
/// on its next cron tick, up to a second later.
pub fn wait_link_up(pc: &mut Connection, rc: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let theirs: String = q(rc, c!["INFO", "replication"]);
        let ours: String = q(pc, c!["INFO", "replication"]);
        if theirs.contains("master_link_status:up") && ours.contains("state=online") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replica never synced:\n{theirs}\nprimary:\n{ours}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A [`replication_primary`] and a replica linked to it and in sync, with a
/// connection to each.
pub fn primary_and_replica() -> (Server, Server, Connection, Connection) {
    let p = replication_primary();
    let r = Server::start(&[]);
    let mut pc = p.conn();
    let mut rc = r.conn();
    let port = p.port.to_string();
    let _: String = q(&mut rc, c!["REPLICAOF", "127.0.0.1", port.as_str()]);
    wait_link_up(&mut pc, &mut rc);
    (p, r, pc, rc)
}

/// Waits until the one replica has applied every write made on `pc` so far.
pub fn wait_replicated(pc: &mut Connection) {
    assert_eq!(
        q::<i64>(pc, c!["WAIT", "1", "5000"]),
        1,
        "the replica acknowledged every write"
    );
}

/// A server with active expiry off (members stay stored until a command
/// reclaims them), whose sets use the small encoding (the default) or, with
/// `large`, the large one from the first member.
pub fn server_with_encoding(large: bool) -> (Server, Connection) {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    if large {
        let _: String = q(&mut c, c!["CONFIG", "SET", "xset.small-max-members", "0"]);
    }
    (s, c)
}
