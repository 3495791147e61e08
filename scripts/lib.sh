# Shared by scripts/run, scripts/test and scripts/bench: installs what a
# fresh Debian machine lacks (redis-server, redis-tools, libclang for the
# redis-module crate's bindgen). Sourced, not run.

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_deps() {
  local need=()
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
  dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
  if [ ${#need[@]} -gt 0 ]; then
    echo "xset: installing ${need[*]}" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "xset: cargo is missing; install Rust (rustup) first" >&2
    exit 1
  fi
}

# valgrind (Debian's package), for the memcheck run of scripts/test --matrix
# (tests/it/memcheck.rs); installed when missing.
ensure_valgrind() {
  if ! command -v valgrind >/dev/null 2>&1; then
    echo "xset: installing valgrind" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends valgrind >&2
  fi
}

# A Python virtual environment ENV (default target/pyenv) holding the
# pinned packages of the requirements file REQ (default
# scripts/python-requirements.txt: redis-py for tests/it/python.rs, matplotlib
# for scripts/bench_report.py), from PyPI. Made again when the pins change.
# Prints nothing on success; the interpreter is ENV/bin/python.
ensure_pyenv() {
  local env=${1:-target/pyenv} req=${2:-scripts/python-requirements.txt}
  if [ -x "$env/bin/python" ] && cmp -s "$req" "$env/requirements.txt"; then
    return 0
  fi
  echo "xset: installing $(grep -vE '^\s*(#|$)' "$req" | tr '\n' ' ')into $env (PyPI)" >&2
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends python3-venv >&2
  fi
  rm -rf "$env"
  python3 -m venv "$env" >&2
  "$env/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
  cp "$req" "$env/requirements.txt"
}

# The pinned cargo-fuzz (from crates.io) and a nightly toolchain, for
# scripts/fuzz; installed when missing.
CARGO_FUZZ_VERSION=0.13.2
ensure_fuzz() {
  if ! rustup toolchain list | grep -q '^nightly'; then
    echo "xset: installing the nightly toolchain (rustup, for cargo fuzz)" >&2
    rustup toolchain install nightly --profile minimal >&2
  fi
  if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    echo "xset: installing cargo-fuzz $CARGO_FUZZ_VERSION (crates.io)" >&2
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked >&2
  fi
}
