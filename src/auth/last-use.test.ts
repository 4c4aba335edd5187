import { describe, expect, it } from 'vitest';
import { LAST_USED_PRECISION_MS, lastUseDue } from './last-use.ts';

describe('lastUseDue', () => {
  it('writes a key’s last use once per LAST_USED_PRECISION_MS, however many requests read its old row', () => {
    const now = 1_000_000_000;
    const stale = new Date(now - 60_000);
    // Requests that read the row before the first write committed all see the stale time: one writes.
    expect(lastUseDue('key_a', stale, now)).toBe(true);
    expect(lastUseDue('key_a', stale, now + 5)).toBe(false);
    expect(lastUseDue('key_a', null, now + 10)).toBe(false);
    // Another key is its own.
    expect(lastUseDue('key_b', null, now)).toBe(true);
    // A recent stored use needs no write; once both it and this process's write are old, one is due again.
    expect(lastUseDue('key_c', new Date(now - 1_000), now)).toBe(false);
    expect(lastUseDue('key_a', stale, now + LAST_USED_PRECISION_MS)).toBe(false);
    expect(lastUseDue('key_a', stale, now + LAST_USED_PRECISION_MS + 1)).toBe(true);
  });
});
