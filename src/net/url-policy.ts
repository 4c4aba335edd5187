import { lookup as dnsLookupCallback, type LookupAddress, type LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/**
 * The one outbound URL policy: where webhooks may be sent, and where the service fetches an
 * identity provider's keys (src/services/federate.ts). Each purpose has its own allow-private
 * setting.
 *
 * Where webhooks may be sent. Receivers on private, loopback, link-local, unspecified, multicast
 * and reserved addresses are refused unless WEBHOOK_ALLOW_PRIVATE_URLS is set (tests, local
 * development): otherwise a tenant could make the service call into its own network (SSRF).
 *
 * Checked twice: when an endpoint is registered or its URL changes (`assertDeliverableUrl`, so the
 * user hears about it at once), and at send time, because a host name may resolve elsewhere later
 * (DNS rebinding). At send time, `deliverableLookup` as the connection's `lookup` closes the gap
 * between a check and the connection's own resolution: the addresses checked are the addresses
 * connected to.
 */

export const MAX_WEBHOOK_URL_LENGTH = 2048;

const DEFAULT_SUBJECT = 'Webhooks cannot be sent';

/** A URL the policy refuses; `message` says why, in words fit for a VALIDATION_FAILED detail. */
export class UrlPolicyError extends Error {
  override name = 'UrlPolicyError';
}

/**
 * The syntactic checks, without DNS: an absolute http(s) URL, no user name or password, at most
 * 2048 characters. Answers the URL normalised by the WHATWG parser (what is stored and sent:
 * `http://2130706433/` becomes `http://127.0.0.1/`, so the stored form shows the real target).
 */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new UrlPolicyError(`At most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlPolicyError('Not an absolute URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UrlPolicyError('Only http and https URLs are allowed.');
  if (url.username !== '' || url.password !== '') {
    throw new UrlPolicyError('A URL must not carry a user name or password; verify deliveries with the signature instead.');
  }
  if (url.hostname === '') throw new UrlPolicyError('The URL has no host.');
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) throw new UrlPolicyError(`At most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  return url;
}

// ---------------------------------------------------------------------------------------------
// Address classification

/** A prefix of an address's bytes and what it is. */
interface Range {
  bytes: number[];
  bits: number;
  reason: string;
}

const v4 = (cidr: string, reason: string): Range => {
  const [address, bits] = cidr.split('/') as [string, string];
  return { bytes: address.split('.').map(Number), bits: Number(bits), reason };
};

const v6 = (cidr: string, reason: string): Range => {
  const [address, bits] = cidr.split('/') as [string, string];
  return { bytes: ipv6Bytes(address)!, bits: Number(bits), reason };
};

const IPV4_RANGES: Range[] = [
  v4('0.0.0.0/8', 'unspecified'),
  v4('10.0.0.0/8', 'private'),
  v4('100.64.0.0/10', 'carrier-grade NAT (shared address space)'),
  v4('127.0.0.0/8', 'loopback'),
  v4('169.254.0.0/16', 'link-local'),
  v4('172.16.0.0/12', 'private'),
  v4('192.0.0.0/24', 'reserved (IETF protocol assignments)'),
  v4('192.168.0.0/16', 'private'),
  v4('198.18.0.0/15', 'reserved (benchmarking)'),
  v4('224.0.0.0/4', 'multicast'),
  v4('240.0.0.0/4', 'reserved (including broadcast)'),
];

/** Prefixes that embed an IPv4 address: the IPv4 rules decide (a mapped loopback is loopback). */
const IPV6_EMBEDDING: Array<{ range: Range; offset: number }> = [
  { range: v6('::ffff:0:0/96', 'IPv4-mapped'), offset: 12 },
  { range: v6('64:ff9b::/96', 'NAT64'), offset: 12 },
  { range: v6('2002::/16', '6to4'), offset: 2 },
];

const IPV6_RANGES: Range[] = [
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('::/96', 'reserved (IPv4-compatible)'),
  v6('64:ff9b:1::/48', 'private (local-use NAT64)'),
  v6('100::/64', 'reserved (discard-only)'),
  v6('fc00::/7', 'private (unique local)'),
  v6('fe80::/10', 'link-local'),
  v6('fec0::/10', 'private (site-local)'),
  v6('ff00::/8', 'multicast'),
];

function inRange(bytes: readonly number[], range: Range): boolean {
  let bits = range.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (range.bytes[i]! & mask)) return false;
  }
  return true;
}

function ipv4Bytes(address: string): number[] | undefined {
  const parts = address.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return undefined;
  return parts.map(Number);
}

/** The 16 bytes of an IPv6 address (zone id dropped; a trailing dotted quad allowed). */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.replace(/^\[|\]$/g, '').split('%')[0]!;
  const tail: number[] = [];
  const quad = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (quad) {
    const bytes = ipv4Bytes(quad[1]!);
    if (!bytes) return undefined;
    tail.push(...bytes);
    text = `${text.slice(0, -quad[1]!.length)}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const words = (half: string) => (half === '' ? [] : half.split(':'));
  const head = words(halves[0]!);
  const rest = halves.length === 2 ? words(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  if (!all.every((word) => /^[0-9a-f]{1,4}$/i.test(word))) return undefined;
  const bytes = all.flatMap((word) => {
    const value = parseInt(word, 16);
    return [value >> 8, value & 0xff];
  });
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

/**
 * Why webhooks may not go to `address` (an IP literal), or undefined when they may: e.g.
 * 'loopback', 'private', 'link-local'. IPv4-mapped, NAT64 and 6to4 IPv6 addresses are judged by
 * the IPv4 address they carry. Anything that is not an IP address is refused.
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare.split('%')[0]!);
  if (family === 4) {
    const bytes = ipv4Bytes(bare)!;
    return IPV4_RANGES.find((range) => inRange(bytes, range))?.reason;
  }
  if (family === 6) {
    const bytes = ipv6Bytes(bare);
    if (!bytes) return 'not an IP address';
    for (const { range, offset } of IPV6_EMBEDDING) {
      if (!inRange(bytes, range)) continue;
      const reason = forbiddenAddressReason(bytes.slice(offset, offset + 4).join('.'));
      return reason ? `${reason} (${range.reason})` : undefined;
    }
    return IPV6_RANGES.find((range) => inRange(bytes, range))?.reason;
  }
  return 'not an IP address';
}

// ---------------------------------------------------------------------------------------------
// Checks with DNS

export interface UrlPolicyOptions {
  /**
   * The purpose's allow-private setting (WEBHOOK_ALLOW_PRIVATE_URLS, IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS):
   * no address is refused, and no lookup is made.
   */
  allowPrivate: boolean;
  /** What is refused, to start the message (default "Webhooks cannot be sent"). */
  subject?: string;
  /** Resolver, replaceable in tests; answers every address of the host. */
  lookup?: (hostname: string) => Promise<LookupAddress[]>;
  /** How long the lookup may take before the host counts as not resolving (default 5 s). */
  lookupTimeoutMs?: number;
}

/** `promise`, or a rejection after `ms` (the lookup itself cannot be cancelled; its answer is ignored). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('lookup timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const lookupAll = (hostname: string) => dnsLookup(hostname, { all: true, verbatim: true });

/** The host of a URL as the resolver takes it (IPv6 literals without brackets). */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * The whole policy: `parseWebhookUrl`, then (unless private targets are allowed) every address
 * the host resolves to must be public; a host that does not resolve is refused too. Throws
 * UrlPolicyError; answers the normalised URL.
 */
export async function assertDeliverableUrl(raw: string | URL, options: UrlPolicyOptions): Promise<URL> {
  const url = parseWebhookUrl(typeof raw === 'string' ? raw : raw.href);
  if (options.allowPrivate) return url;
  const host = hostOf(url);
  let addresses: LookupAddress[];
  try {
    addresses = await within((options.lookup ?? lookupAll)(host), options.lookupTimeoutMs ?? 5_000);
  } catch {
    throw new UrlPolicyError(`The host ${host} does not resolve.`);
  }
  if (addresses.length === 0) throw new UrlPolicyError(`The host ${host} does not resolve.`);
  for (const { address } of addresses) {
    const reason = forbiddenAddressReason(address);
    if (reason) {
      const via = isIP(host) ? '' : ` (${host} resolves to ${address})`;
      throw new UrlPolicyError(`${options.subject ?? DEFAULT_SUBJECT} to a ${reason} address${via}.`);
    }
  }
  return url;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `http.request` / `https.request` (or an undici Agent's `connect.lookup`) that
 * refuses, at connection time, every host resolving to an address the policy forbids: the
 * address checked is the one connected to, so a DNS answer that changes between the check and
 * the connection (rebinding) cannot slip through. The error is a UrlPolicyError (code
 * EWEBHOOKADDRESS). With `allowPrivate` it is the plain resolver.
 */
export function deliverableLookup(allowPrivate: boolean, subject = DEFAULT_SUBJECT) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookupCallback(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses;
      if (!allowPrivate) {
        for (const { address } of list) {
          const reason = forbiddenAddressReason(address);
          if (reason) {
            const refused = Object.assign(new UrlPolicyError(`${subject} to a ${reason} address (${hostname} resolves to ${address}).`), {
              code: 'EWEBHOOKADDRESS',
            });
            return callback(refused, []);
          }
        }
      }
      if (options.all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
