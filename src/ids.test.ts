import { describe, expect, it } from 'vitest';
import { isId, newId } from './ids.ts';

describe('ids', () => {
  it('carry the spec prefixes', () => {
    expect(newId('organisation')).toMatch(/^org_[0-9A-Za-z]{22}$/);
    expect(newId('roleAssignment')).toMatch(/^uar_/);
    expect(newId('channelKey')).toMatch(/^schk_/);
    expect(newId('webhookEvent')).toMatch(/^wev_/);
    expect(newId('webhookDelivery')).toMatch(/^whd_/);
  });

  it('are unique', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('event')));
    expect(ids.size).toBe(10_000);
  });

  it('recognise their kind', () => {
    expect(isId('account', newId('account'))).toBe(true);
    expect(isId('account', newId('event'))).toBe(false);
    expect(isId('account', 'acc_')).toBe(false);
    expect(isId('account', "acc_1' OR 1=1")).toBe(false);
  });
});
