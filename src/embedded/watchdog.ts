import type { ChildProcess } from 'node:child_process';

/**
 * A child server that must not outlive this process (the embedded Temporal dev server and
 * PostgreSQL): `spawn('/bin/sh', watchdogArgs(...), { stdio: ['pipe', ...], detached: true })`.
 *
 * The server runs behind a shell that stops it with `signal` when our end of its stdin closes,
 * which the kernel does however this process ends (SIGKILL, a test runner tearing its worker down,
 * a crash): otherwise the server would outlive us as an orphan holding its ports and data. The
 * shell also forwards SIGTERM/SIGINT sent to it as `signal`, and exits with the server's status.
 * `detached` gives it its own process group, so that a SIGKILL escalation reaches the server too.
 */
const PARENT_WATCHDOG = `
signal=$1
shift
exec 3<&0
"$@" </dev/null &
server=$!
{ while read -r _ <&3; do :; done; kill -"$signal" "$server"; } >/dev/null 2>&1 &
watcher=$!
exec 3<&-
trap 'kill -"$signal" "$server" 2>/dev/null' TERM INT
while :; do
  wait "$server"
  status=$?
  kill -0 "$server" 2>/dev/null || break
done
kill "$watcher" 2>/dev/null
exit "$status"
`;

/** The arguments of /bin/sh for `command args` behind the watchdog; `name` is the shell's $0 (what ps shows). */
export function watchdogArgs(name: string, signal: 'TERM' | 'INT', command: string, args: readonly string[]): string[] {
  return ['-c', PARENT_WATCHDOG, name, signal, command, ...args];
}

export interface WatchedChild {
  /** When the child (the shell, so the server too) has ended and its output is complete. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Why it could not be spawned, if it could not. */
  spawnError: () => Error | undefined;
  /** Whether `stop` was called: its shutdown chatter is not worth forwarding. */
  stopping: () => boolean;
  /** Sends `stopSignal`, kills the process group after `graceMs`, and resolves once it has ended. */
  stop: () => Promise<void>;
}

/**
 * The end of a child spawned behind the watchdog (`detached`): stopped with `stopSignal` and, past
 * `graceMs`, killed with its process group (`onKill` says so first); killed at once if this process
 * exits without stopping it.
 */
export function watchChild(child: ChildProcess, opts: { stopSignal: NodeJS.Signals; graceMs: number; onKill: () => void }): WatchedChild {
  // 'close' rather than 'exit': the output is complete by then.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const killOnExit = () => killGroup('SIGKILL');
  process.once('exit', killOnExit);
  let stopping = false;
  return {
    exited,
    spawnError: () => spawnError,
    stopping: () => stopping,
    stop: async () => {
      if (stopping) return exited.then(() => undefined);
      stopping = true;
      process.removeListener('exit', killOnExit);
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      child.kill(opts.stopSignal);
      const timer = setTimeout(() => {
        opts.onKill();
        killGroup('SIGKILL');
      }, opts.graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Calls `onLine` with each non-empty line of a child's output stream, keeping the last `keep` of
 * them in `tail` (for the error that says why it failed).
 */
export function eachLine(stream: NodeJS.ReadableStream, tail: string[], keep: number, onLine: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      tail.push(line);
      if (tail.length > keep) tail.shift();
      onLine(line);
    }
  });
}
