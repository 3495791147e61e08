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
