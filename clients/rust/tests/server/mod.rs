//! A real `redis-server` with the xset module on a free loopback port,
//! killed on drop. The module is `XSET_MODULE`, else
//! `target/release/libxset.so` at the repository root (`cargo build
//! --release --features fault-injection` there); the server is
//! `XSET_SERVER`, else `redis-server` on PATH. Readiness is waited on.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

pub struct Server {
    pub port: u16,
    dir: PathBuf,
    child: Child,
}

fn module_path() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = match std::env::var_os("XSET_MODULE").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => root.join("target/release/libxset.so"),
    };
    assert!(
        p.exists(),
        "{} is missing: cargo build --release --features fault-injection at the \
         repository root, or name the module in XSET_MODULE",
        p.display()
    );
    p
}

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

impl Server {
    pub fn start() -> Server {
        let dir = std::env::temp_dir().join(format!(
            "xset-rs-client-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let bin = std::env::var("XSET_SERVER")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "redis-server".into());
        for _attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&dir)
                .arg("--loadmodule")
                .arg(module_path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
            let mut server = Server {
                port,
                dir: dir.clone(),
                child,
            };
            if server.wait_ready() {
                return server;
            }
        }
        panic!("redis-server did not start");
    }

    /// Waits for PING; false when the server exited (it lost the port).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if let Ok(mut c) = self.client(2).get_connection()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return true;
            }
            sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn client(&self, protocol: u8) -> redis::Client {
        let resp = if protocol == 3 { "?protocol=resp3" } else { "" };
        redis::Client::open(format!("redis://127.0.0.1:{}/{resp}", self.port)).expect("client")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
