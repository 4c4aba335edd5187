#!/usr/bin/env bash
# Puts Schemathesis (the OpenAPI fuzzer test/platform/schemathesis.test.ts runs against /v1 and /live) into
# its own virtualenv under .tools/schemathesis/ and prints the path of its `st` command. From PyPI,
# pinned; nothing is installed outside .tools/. Idempotent: does nothing when the pinned version is
# there. Needs python3 with the venv module (Debian: python3-venv).
set -euo pipefail

SCHEMATHESIS_VERSION="4.32.5"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo_root/.tools/schemathesis"
stamp="$venv/.version"

die() {
  echo "ensure-schemathesis: ERROR: $*" >&2
  exit 1
}

mkdir -p "$repo_root/.tools"
# Two test workers may run this at once: one installs, the other waits.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$repo_root/.tools/.schemathesis.lock"
  flock 9
fi

if [[ -x "$venv/bin/st" && -f "$stamp" && "$(cat "$stamp")" == "$SCHEMATHESIS_VERSION" ]]; then
  echo "$venv/bin/st"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || die "python3 is required; install it, e.g. apt-get install -y python3 python3-venv"
rm -rf "$venv"
if ! python3 -m venv "$venv" >&2; then
  die "python3 -m venv failed; install the venv module, e.g. apt-get install -y python3-venv"
fi
echo "ensure-schemathesis: installing schemathesis==$SCHEMATHESIS_VERSION from PyPI" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2 ||
  die "could not install schemathesis==$SCHEMATHESIS_VERSION (is PyPI reachable? pip honours PIP_INDEX_URL / pip.conf)"
echo "$SCHEMATHESIS_VERSION" >"$stamp"
echo "$venv/bin/st"
