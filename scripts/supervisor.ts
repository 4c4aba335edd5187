import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/**
 * What `npm start` does with its API and worker processes, as a process manager would: a child
 * that exits on its own (a crash, a kill -9) is restarted after a growing delay (1 s, 2 s, 4 s … 30 s;
 * back to 1 s once a child has run for a minute), and the others keep running. Only stop() ends them.
 */

export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  options: SpawnOptions;
}

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;
const STABLE_MS = 60_000;

export class Supervisor {
  readonly #children = new Map<string, ChildProcess>();
  readonly #delays = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopping = false;

  constructor(private readonly say: (message: string) => void) {}

  start(spec: ChildSpec): void {
    if (this.#stopping) return;
    const startedAt = Date.now();
    const child = spawn(spec.command, spec.args, spec.options);
    this.#children.set(spec.name, child);
    this.say(`${spec.name} started (pid ${child.pid})`);
    child.once('exit', (code, signal) => {
      if (this.#children.get(spec.name) === child) this.#children.delete(spec.name);
      if (this.#stopping) return;
      const delay = Date.now() - startedAt >= STABLE_MS ? FIRST_DELAY_MS : (this.#delays.get(spec.name) ?? FIRST_DELAY_MS);
      this.#delays.set(spec.name, Math.min(delay * 2, MAX_DELAY_MS));
      this.say(`${spec.name} exited (${signal ?? `code ${code}`}); restarting in ${delay / 1000} s`);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.start(spec);
      }, delay);
      this.#timers.add(timer);
    });
  }

  /** Stops every child: SIGTERM (they drain), SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    this.#stopping = true;
    for (const timer of this.#timers) clearTimeout(timer);
    await Promise.all(
      [...this.#children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
  }
}
