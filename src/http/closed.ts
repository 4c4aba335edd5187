import type { ServerResponse } from 'node:http';

/**
 * Runs `then` once the response's connection is closed: now, when it closed already. A client may
 * go while its request is still being answered (a subscription awaiting its first reads): a
 * listener added after the response's 'close' would never run, and whatever it releases would be
 * held for the life of the process (test/live/stream-edges.test.ts).
 */
export function whenClosed(res: ServerResponse, then: () => void): void {
  if (res.closed) then();
  else res.once('close', then);
}
