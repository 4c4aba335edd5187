import { AppError } from '../errors.ts';

/**
 * Fixed-window counters per (bucket, key), in this process. They bound what one client can do with
 * a public credential (a publishable key lives in every browser): checkouts and magic-link mails
 * per key and client address. With several API processes each counts alone, so the effective
 * limit is the limit times the processes; a shared store would make it exact. Memory is bounded:
 * past MAX_WINDOWS the oldest windows are dropped (a window is moved to the end when it restarts).
 */
const MAX_WINDOWS = 100_000;

interface Window {
  startedAt: number;
  count: number;
}

export class RateLimiter {
  #windows = new Map<string, Window>();

  /** Counts one use and refuses it (429 RATE_LIMITED with Retry-After) beyond `limit` in the window. */
  take(bucket: string, key: string, limit: number, windowMs: number, now = Date.now()): void {
    this.check(bucket, key, limit, windowMs, now);
    this.count(bucket, key, windowMs, now);
  }

  /** Refuses (429) when `limit` uses are counted in the current window already; counts nothing. */
  check(bucket: string, key: string, limit: number, windowMs: number, now = Date.now()): void {
    const window = this.#current(`${bucket}|${key}`, windowMs, now);
    if (window && window.count >= limit) {
      throw tooMany(Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000)));
    }
  }

  /** Counts one use (for limits that count only what succeeded). */
  count(bucket: string, key: string, windowMs: number, now = Date.now()): void {
    const id = `${bucket}|${key}`;
    let window = this.#current(id, windowMs, now);
    if (!window) {
      this.#windows.delete(id);
      while (this.#windows.size >= MAX_WINDOWS) this.#windows.delete(this.#windows.keys().next().value!);
      window = { startedAt: now, count: 0 };
      this.#windows.set(id, window);
    }
    window.count += 1;
  }

  #current(id: string, windowMs: number, now: number): Window | undefined {
    const window = this.#windows.get(id);
    return window && now - window.startedAt < windowMs ? window : undefined;
  }
}

export function tooMany(retryAfterSeconds: number, message = 'Too many requests; try again later.'): AppError {
  return new AppError('RATE_LIMITED', message, undefined, { 'Retry-After': String(retryAfterSeconds) });
}

/**
 * The part of a client address that names one client: IPv4 whole (IPv4-mapped IPv6 unwrapped),
 * IPv6 by its /64 (one subscriber usually holds a whole /64, so single addresses are free to rotate).
 */
export function clientBucket(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!ip.includes(':')) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((group) => (group || '0').toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
