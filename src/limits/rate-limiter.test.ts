import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.ts';
import { trustProxy } from './app.ts';
import { clientBucket, RateLimiter } from './rate-limit.ts';

describe('clientBucket', () => {
  it('keeps IPv4 whole, unwraps IPv4-mapped IPv6, and groups IPv6 by /64', () => {
    expect(clientBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(clientBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientBucket('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientBucket('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientBucket('2001:0db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientBucket('::1')).toBe('0:0:0:0::/64');
  });
});

describe('RateLimiter', () => {
  it('refuses past the limit with 429 and Retry-After until the window ends, then allows again', () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 3; i += 1) limiter.take('b', 'k', 3, 60_000, 1_000);
    let refused: unknown;
    try {
      limiter.take('b', 'k', 3, 60_000, 31_000);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('RATE_LIMITED');
    expect((refused as AppError).headers['Retry-After']).toBe('30');
    expect(() => limiter.take('b', 'other', 3, 60_000, 31_000)).not.toThrow();
    expect(() => limiter.take('b', 'k', 3, 60_000, 61_000)).not.toThrow();
  });

  it('check() counts nothing; count() counts without refusing', () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 5; i += 1) limiter.check('b', 'k', 1, 60_000, 0);
    limiter.count('b', 'k', 60_000, 0);
    expect(() => limiter.check('b', 'k', 1, 60_000, 0)).toThrow();
  });
});

it('TRUST_PROXY becomes what express takes', () => {
  expect(trustProxy('loopback')).toBe('loopback');
  expect(trustProxy('true')).toBe(true);
  expect(trustProxy('false')).toBe(false);
  expect(trustProxy('2')).toBe(2);
  expect(trustProxy('10.0.0.0/8, loopback')).toBe('10.0.0.0/8, loopback');
});
