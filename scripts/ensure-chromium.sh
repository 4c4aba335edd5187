#!/usr/bin/env bash
# Makes a Chromium the browser tests can drive with playwright-core available, and prints the path
# of its executable on stdout (last line), e.g. /usr/bin/chromium.
# - CHROMIUM_PATH set and executable: nothing to do, that path is printed.
# - Else the first of chromium, chromium-browser, google-chrome on PATH (or /usr/bin/chromium).
# - Else, on Debian: installs Debian's `chromium` package with apt-get (through sudo when not root).
# Playwright's own browser download cannot be used: its host is not reachable from these
# machines, while Debian's package is, and playwright-core drives it over CDP all the same.
# Idempotent and quick when Chromium is there. Progress goes to stderr.
set -euo pipefail

say() { echo "ensure-chromium: $*" >&2; }
die() {
  echo "ensure-chromium: ERROR: $*" >&2
  exit 1
}

find_chromium() {
  local name path
  for name in chromium chromium-browser google-chrome; do
    path="$(command -v "$name" 2>/dev/null)" || continue
    # Ubuntu's chromium-browser may be a snap-install stub that exits non-zero without a browser.
    "$path" --version >/dev/null 2>&1 && { echo "$path"; return 0; }
  done
  [[ -x /usr/bin/chromium ]] && { echo /usr/bin/chromium; return 0; }
  return 1
}

if [[ -n "${CHROMIUM_PATH:-}" ]]; then
  if [[ -x "$CHROMIUM_PATH" ]]; then
    echo "$CHROMIUM_PATH"
    exit 0
  fi
  say "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable; looking for Chromium elsewhere"
fi

if chromium_path="$(find_chromium)"; then
  echo "$chromium_path"
  exit 0
fi

command -v apt-get >/dev/null 2>&1 ||
  die "no Chromium found (chromium, chromium-browser, google-chrome) and this is not a Debian/Ubuntu system (no apt-get); install Chromium or set CHROMIUM_PATH to its executable"

# sudo drops the environment, so DEBIAN_FRONTEND goes through env on both paths.
as_root=(env DEBIAN_FRONTEND=noninteractive)
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 ||
    die "no Chromium found, and installing it (apt-get install chromium) needs root and there is no sudo.
  Run as root: bash scripts/ensure-chromium.sh
  or point the tests at an existing browser: export CHROMIUM_PATH=/path/to/chromium"
  as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
fi

say "installing Chromium with apt-get"
"${as_root[@]}" apt-get update >&2 || die "apt-get update failed"
"${as_root[@]}" apt-get install -y chromium >&2 || die "apt-get install -y chromium failed"

chromium_path="$(find_chromium)" || die "apt-get installed chromium but no chromium executable appeared on PATH"
say "$("$chromium_path" --version 2>/dev/null || echo Chromium) ready at $chromium_path"
echo "$chromium_path"
