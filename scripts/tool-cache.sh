# Sourced by the scripts that need a tool the machine may not have (cargo-audit, cfn-guard,
# cargo-fuzz; cfn-lint, sam, cargo-lambda, the AWS CLI and moto from PyPI). Each tool, at a pinned
# version, is installed once per user into one cache every checkout shares, as cargo shares its
# registry: ${SLUICE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-tools}. A fresh clone (CI
# makes one per run) then finds them instead of building cargo-audit for 8 minutes and cfn-guard
# for 4 again. Delete the folder to install afresh; change a pin here to get another version.
#
# Two checkouts installing at once take turns (flock); a tool is visible only once whole (cargo's
# into a scratch root moved into place, a virtualenv marked complete last), so an install that was
# killed is started over, not used half made.

SLUICE_TOOLS_DIR=${SLUICE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-tools}

# Holds the cache's lock while "$@" runs (without util-linux's flock, as on macOS, runs it unlocked).
locked() {
  mkdir -p "$SLUICE_TOOLS_DIR"
  if ! command -v flock >/dev/null 2>&1; then
    "$@"
    return
  fi
  (
    flock 9
    "$@"
  ) 9>"$SLUICE_TOOLS_DIR/.lock"
}

# cargo_tool NAME VERSION [cargo install flags]: prints the bin folder holding NAME at VERSION,
# built from crates.io (--locked) the first time.
cargo_tool() {
  local name=$1 version=$2
  shift 2
  local root="$SLUICE_TOOLS_DIR/cargo/$name-$version"
  if [ ! -x "$root/bin/$name" ]; then
    command -v cargo >/dev/null 2>&1 || { echo "cargo is missing: $name is built with it (https://rustup.rs)" >&2; return 1; }
    locked build_cargo_tool "$root" "$name" "$version" "$@" \
      || { echo "cargo install $name $version failed (crates.io unreachable?)" >&2; return 1; }
  fi
  echo "$root/bin"
}

build_cargo_tool() {
  local root=$1 name=$2 version=$3
  shift 3
  [ -x "$root/bin/$name" ] && return 0 # another checkout built it while this one waited
  echo "building $name $version into $root (minutes, once for every checkout)..." >&2
  rm -rf "$root.partial"
  cargo install --quiet --locked "$@" "$name" --version "$version" --root "$root.partial" >&2
  mv "$root.partial" "$root"
}

# venv_tool FOLDER BINARY PIP-REQUIREMENT...: prints the bin folder of a private virtualenv holding
# the pinned requirements, installed the first time. FOLDER names the pins, so a new pin is a new
# virtualenv beside the old one.
venv_tool() {
  local venv="$SLUICE_TOOLS_DIR/venv/$1" binary=$2
  shift 2
  if [ ! -f "$venv/.complete" ]; then
    command -v python3 >/dev/null 2>&1 || { echo "python3 is missing: install it (apt-get install python3 python3-venv) for $*" >&2; return 1; }
    locked build_venv "$venv" "$@" || { echo "pip install $* failed (PyPI unreachable, or python3-venv missing?)" >&2; return 1; }
  fi
  [ -x "$venv/bin/$binary" ] || { echo "$venv has no $binary: delete it and run again" >&2; return 1; }
  echo "$venv/bin"
}

build_venv() {
  local venv=$1
  shift
  [ -f "$venv/.complete" ] && return 0
  echo "installing $* into $venv (a minute or two, once for every checkout)..." >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >/dev/null
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
  touch "$venv/.complete"
}
