import { describe, expect, it } from 'vitest';
import { trustProxy } from '../http/middleware.ts';
import { clientBucket } from './rate-limiter.ts';

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

it('TRUST_PROXY becomes what express takes', () => {
  expect(trustProxy('loopback')).toBe('loopback');
  expect(trustProxy('true')).toBe(true);
  expect(trustProxy('false')).toBe(false);
  expect(trustProxy('2')).toBe(2);
  expect(trustProxy('10.0.0.0/8, loopback')).toBe('10.0.0.0/8, loopback');
});
