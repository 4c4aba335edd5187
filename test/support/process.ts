import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../src/db/migrate.ts';

export const TSX = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');

export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** Resolves when `pattern` appears in stdout or stderr; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * A real child process of ours (the worker, the start command), with its output captured: run
 * through tsx from the repository unless told otherwise (e.g. `node dist/...` in a built copy).
 */
export function spawnProcess(
  args: string[],
  env: Record<string, string | undefined>,
  { command = TSX, cwd = REPO_ROOT }: { command?: string; cwd?: string } = {},
): Spawned {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match) {
            done();
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${output.slice(-4000)}`));
        }, timeoutMs);
        const onExit = () => {
          done();
          reject(new Error(`process exited before ${pattern}; output:\n${output.slice(-4000)}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
