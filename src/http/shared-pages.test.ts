import { describe, expect, it } from 'vitest';
import { SharedPages } from './shared-pages.ts';

/** Reads whose answers the test gives when it likes, counting them. */
function reads() {
  const pending: Array<(value: string) => void> = [];
  return {
    read: () => new Promise<string>((resolve) => pending.push(resolve)),
    get count() {
      return pending.length;
    },
    answer: (index: number, value: string) => pending[index]!(value),
  };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('SharedPages', () => {
  it('shares one read; once stale, the next request reads again and whoever asks meanwhile waits for that read', async () => {
    const pages = new SharedPages<string>(30, () => true, new Set());
    const r = reads();
    const first = [pages.get('org', 'k', r.read), pages.get('org', 'k', r.read)];
    expect(r.count).toBe(1);
    r.answer(0, 'one');
    expect(await Promise.all(first)).toEqual(['one', 'one']);
    expect(await pages.get('org', 'k', r.read)).toBe('one');
    expect(r.count).toBe(1);

    await wait(40);
    const refreshing = [pages.get('org', 'k', r.read), pages.get('org', 'k', r.read)];
    expect(r.count).toBe(2);
    let early = false;
    void refreshing[1]!.then(() => (early = true));
    await settled();
    // Not the page before: buyers who wait here hold nothing, where the same buyers let through
    // queued at the cart and at payment (bench/README.md, "On-sale").
    expect(early).toBe(false);
    r.answer(1, 'two');
    expect(await Promise.all(refreshing)).toEqual(['two', 'two']);
  });

  it('after a change of the organisation, everyone waits for the new read: nothing from before the change is served', async () => {
    const pages = new SharedPages<string>(30, () => true, new Set());
    const r = reads();
    const first = pages.get('org', 'k', r.read);
    r.answer(0, 'before the change');
    await first;
    pages.changed('org');
    const [a, b] = [pages.get('org', 'k', r.read), pages.get('org', 'k', r.read)];
    expect(r.count).toBe(2);
    let early = false;
    void b.then(() => (early = true));
    await settled();
    expect(early).toBe(false);
    r.answer(1, 'after the change');
    expect(await Promise.all([a, b])).toEqual(['after the change', 'after the change']);
  });

  it('while change notices are not known to arrive, shares only the read in flight', async () => {
    let listening = true;
    const pages = new SharedPages<string>(30, () => listening, new Set());
    const r = reads();
    const first = pages.get('org', 'k', r.read);
    r.answer(0, 'one');
    await first;
    listening = false;
    const again = pages.get('org', 'k', r.read);
    expect(r.count).toBe(2);
    const meanwhile = pages.get('org', 'k', r.read);
    expect(r.count).toBe(2);
    r.answer(1, 'two');
    expect(await Promise.all([again, meanwhile])).toEqual(['two', 'two']);
  });
});
