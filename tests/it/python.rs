//! The Python examples are executable: every ` ```python ` block of the
//! README and of `docs/recipes.md` runs against a real server with
//! redis-py, once under RESP2 and once under RESP3
//! (`tests/python/run_blocks.py` does the running; the blocks assert their
//! own replies).
//!
//! The interpreter is `XSET_PYTHON`, else `target/pyenv/bin/python`, the
//! virtual environment that `scripts/test` makes with the pinned packages
//! of `scripts/python-requirements.txt` and the client library of
//! `clients/python` (README.md's example uses it).

use crate::harness::Server;
use std::path::PathBuf;
use std::process::Command;

/// Pages whose Python blocks must run.
const PAGES: [&str; 2] = ["README.md", "docs/recipes.md"];

fn python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let p = match std::env::var_os("XSET_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => root.join("target/pyenv/bin/python"),
    };
    assert!(
        p.exists(),
        "{} is missing: run scripts/test, which installs redis-py and clients/python \
         into target/pyenv (or name an interpreter that has redis-py 5+ and \
         redis-xset in XSET_PYTHON)",
        p.display()
    );
    p
}

#[test]
fn every_python_example_runs_under_resp2_and_resp3() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let server = Server::start(&[]);
    let out = Command::new(python())
        .current_dir(&root)
        .arg("tests/python/run_blocks.py")
        .arg(server.port.to_string())
        .args(PAGES)
        .output()
        .expect("the Python interpreter runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "Python examples failed:\n{stdout}\n{stderr}"
    );
    // Two runs (RESP2, RESP3) of at least one block per recipe and the README's.
    let passed = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(
        passed >= 2 * 8,
        "only {passed} Python block runs:\n{stdout}"
    );
}
