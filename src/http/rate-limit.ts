import { AppError } from '../errors.ts';

/**
 * Fixed-window counters per (bucket, key), in this process. They bound what one client can do with
 * a public credential (a publishable key lives in every browser): checkouts and magic-link mails
 * per key and IP address. With several API processes each counts alone, so the effective limit is
 * the limit times the processes; a shared store would make it exact.
 */
export class RateLimiter {
  #windows = new Map<string, { startedAt: number; count: number }>();

  /** Counts one use; over `limit` in the window it throws 429 RATE_LIMITED with Retry-After. */
  take(bucket: string, key: string, limit: number, windowMs: number, now = Date.now()): void {
    const id = `${bucket}|${key}`;
    let window = this.#windows.get(id);
    if (!window || now - window.startedAt >= windowMs) {
      if (this.#windows.size >= 100_000) this.#sweep(now, windowMs);
      window = { startedAt: now, count: 0 };
      this.#windows.set(id, window);
    }
    window.count += 1;
    if (window.count > limit) {
      const retryAfter = Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000));
      throw tooMany(retryAfter);
    }
  }

  #sweep(now: number, windowMs: number): void {
    for (const [id, window] of this.#windows) if (now - window.startedAt >= windowMs) this.#windows.delete(id);
  }
}

export function tooMany(retryAfterSeconds: number, message = 'Too many requests; try again later.'): AppError {
  return new AppError('RATE_LIMITED', message, undefined, { 'Retry-After': String(retryAfterSeconds) });
}
