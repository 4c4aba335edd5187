import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { processTree } from './support.ts';

/**
 * The admin screens of the on-sale benchmark's live mode (`ONSALE_SUBSCRIBERS`, bench/onsale.ts):
 * N GraphQL subscriptions over server-sent events, each on its own HTTP connection, read by a
 * plain SSE parser over node:http (graphql-sse's fetch-based client costs more than a thousand
 * streams on a shared machine can spare). They run in a child process of the benchmark so that
 * reading a million events neither stalls the buyers' event loop nor is stalled by it.
 *
 * Each `orderChanged` event's delay is its receipt time minus its `committedAt` (when the change's
 * transaction ended, moments before its commit): one machine, one clock. Each stream's sequence of cursors is
 * kept as a count, a sum and a fingerprint, so the parent can check against `live_events` that
 * every subscriber received every event once and all received them in one order.
 */

const ORDER_CHANGED = `subscription ($accountId: ID!) {
  orderChanged(accountId: $accountId) { cursor change committedAt order { id } }
}`;
const COUNTERS = `subscription ($occurrenceId: ID!) {
  salesCounters(occurrenceId: $occurrenceId) { counters { sold available } }
}`;

export interface SubscriberPlan {
  origin: string;
  org: string;
  /** API keys with orders.read and events.read; streams are spread over them in turn. */
  keys: string[];
  accountId: string;
  occurrenceId: string;
  count: number;
  /** Every n-th stream follows the occurrence's counters; the others the account's orders. */
  countersEvery: number;
}

/** What one `orderChanged` stream received. */
export interface OrderStreamSummary {
  events: number;
  /** Sum of the cursors received: with `events`, the set of events (checked against the table). */
  cursorSum: number;
  /** A fingerprint of the sequence of cursors: equal for streams that received one sequence. */
  fingerprint: number;
  /** Times a cursor was not greater than the one before. */
  descents: number;
  /** CONFIRMED, CANCELLED or REFUNDED received for an order whose CREATED had not come first. */
  beforeCreated: number;
  ended: boolean;
}

export interface SubscribersSummary {
  orders: OrderStreamSummary[];
  counters: Array<{ events: number; lastSold: number | null; lastAvailable: number | null; ended: boolean }>;
  /** Over every expected event (one not received is Infinity), and over those received. */
  latency: { samples: number; p50: number; p99: number; max: number; receivedP50: number; receivedP99: number };
  errors: string[];
  /** The readers' CPU from the moment every stream was open until `finish` (the accounting after it not included). */
  cpuMs: number;
}

interface Progress {
  minOrderEvents: number;
  maxOrderEvents: number;
  lastEventAt: number;
}

type ToChild = { type: 'open'; plan: SubscriberPlan } | { type: 'progress' } | { type: 'finish'; expected: number };
type FromChild =
  | { type: 'opened'; ports: number[]; failed: number; errors: string[] }
  | ({ type: 'progress' } & Progress)
  | ({ type: 'summary' } & SubscribersSummary);

/** The parent's handle on the subscribers' process. */
export interface Subscribers {
  pid: number;
  /** Opens the plan's streams and resolves once every one answered its first bytes. */
  open(plan: SubscriberPlan): Promise<{ ports: number[]; failed: number; errors: string[] }>;
  progress(): Promise<Progress>;
  /**
   * Closes every stream and ends the process; what they received. The percentiles are over
   * `expected` order events: one not received counts as later than any received.
   */
  finish(expected: number): Promise<SubscribersSummary>;
}

export function startSubscribers(): Subscribers {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ['--import', 'tsx', ...(process.env.BENCH_SUBSCRIBERS_NODE_ARGS ?? '').split(' ').filter(Boolean)],
    env: { ...process.env, BENCH_LIVE_SUBSCRIBERS_CHILD: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Structured clone: a percentile of events never received is Infinity, which JSON would lose.
    serialization: 'advanced',
  });
  const ask = <T extends FromChild['type']>(message: ToChild, answer: T): Promise<Extract<FromChild, { type: T }>> =>
    new Promise((resolve, reject) => {
      const onMessage = (reply: FromChild) => {
        if (reply.type !== answer) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(reply as Extract<FromChild, { type: T }>);
      };
      const onExit = (code: number | null) => reject(new Error(`the subscribers' process exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(message);
    });
  return {
    pid: child.pid!,
    open: (plan) => ask({ type: 'open', plan }, 'opened'),
    progress: () => ask({ type: 'progress' }, 'progress'),
    finish: (expected) => ask({ type: 'finish', expected }, 'summary'),
  };
}

/**
 * How many of the connections from `clientPorts` to `serverPort` each process under `rootPid`
 * holds (Linux: the established sockets of /proc/net/tcp, found among each process's descriptors).
 */
export function connectionsPerProcess(rootPid: number, serverPort: number, clientPorts: number[]): Map<number, number> {
  const wanted = new Set(clientPorts);
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '01') continue;
      const port = (address: string) => parseInt(address.slice(address.lastIndexOf(':') + 1), 16);
      if (port(fields[1]!) === serverPort && wanted.has(port(fields[2]!))) inodes.add(fields[9]!);
    }
  }
  const held = new Map<number, number>();
  for (const pid of processTree(rootPid)) {
    let count = 0;
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
          if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) count += 1;
        } catch {
          // closed meanwhile
        }
      }
    } catch {
      continue;
    }
    held.set(pid, count);
  }
  return held;
}

/** The p-th percentile of `total` values of which `sorted` are the smallest (the rest never came: Infinity). */
function percentile(sorted: Float64Array, p: number, total: number): number {
  if (total === 0) return 0;
  const index = Math.min(total - 1, Math.floor((p / 100) * total));
  return index < sorted.length ? sorted[index]! : Infinity;
}

/** The child: the streams themselves. */
function runChild(): void {
  let cpuAtOpened = process.cpuUsage();
  const errors: string[] = [];
  const note = (message: string) => {
    if (errors.length < 5) errors.push(message);
  };
  let latencies = new Float64Array(1 << 20);
  let samples = 0;
  let lastEventAt = 0;
  /** Orders numbered in the order first seen, so that each stream keeps one byte per order. */
  const orderIndex = new Map<string, number>();

  interface Stream {
    kind: 'orders' | 'counters';
    socket: net.Socket;
    port: number;
    ended: boolean;
    events: number;
    cursorSum: number;
    fingerprint: number;
    last: number;
    descents: number;
    beforeCreated: number;
    created: Uint8Array;
    lastSold: number | null;
    lastAvailable: number | null;
    index: number;
    /** Order events received so far (what `progress` reports while the sale runs). */
    received: number;
    /** What it received and when, accounted event by event once the sale is over (see Chunk). */
    receivedAt: number[];
    receivedChunks: Chunk[];
  }
  const streams: Stream[] = [];

  interface SseEvent {
    event: string;
    data: string;
  }
  /** Whole events of server-sent text (ending in a blank line). */
  const split = (text: string): SseEvent[] => {
    const events: SseEvent[] = [];
    for (const block of text.split('\n\n')) {
      if (block === '') continue;
      let event = '';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trimStart();
      }
      events.push({ event, data });
    }
    return events;
  };
  /**
   * One parse of each distinct event: a thousand screens would each parse theirs in their own
   * browser, on their own machine; here they share the API's two cores, and parsing every copy
   * would take from the sale what no deployment's API pays.
   */
  const parses = new Map<string, any>();
  const parsed = (data: string): any => {
    let result = parses.get(data);
    if (result === undefined) {
      if (parses.size >= 10_000) parses.clear();
      result = JSON.parse(data);
      const change = result?.data?.orderChanged;
      if (change?.committedAt) change.at = Date.parse(change.committedAt);
      const order = change?.order?.id as string | undefined;
      if (order !== undefined) {
        let index = orderIndex.get(order);
        if (index === undefined) orderIndex.set(order, (index = orderIndex.size));
        change.index = index;
      }
      parses.set(data, result);
    }
    return result;
  };

  const onOrderEvent = (stream: Stream, result: any, receivedAt: number) => {
    const change = result?.data?.orderChanged;
    if (!change || change.cursor === null) {
      note(`orderChanged: ${JSON.stringify(result).slice(0, 300)}`);
      return;
    }
    const cursor = Number(change.cursor);
    stream.events += 1;
    stream.cursorSum += cursor;
    stream.fingerprint = (Math.imul(stream.fingerprint, 31) + cursor) | 0;
    if (cursor <= stream.last) stream.descents += 1;
    stream.last = cursor;
    const index = change.index as number;
    if (index >= stream.created.length) {
      const grown = new Uint8Array(Math.max(index + 1, stream.created.length * 2));
      grown.set(stream.created);
      stream.created = grown;
    }
    if (change.change === 'CREATED') stream.created[index] = 1;
    else if (stream.created[index] !== 1) stream.beforeCreated += 1;
    const at = change.at as number;
    if (samples === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[samples++] = receivedAt - at;
  };

  /** A stream's events received at `receivedAt`, each accounted for. */
  const accountFor = (stream: Stream, events: readonly SseEvent[], receivedAt: number) => {
    for (const { event, data } of events) {
      if (event === 'complete') {
        stream.ended = true;
        note(`stream ${stream.index} completed`);
      } else if (event === 'next') {
        const result = parsed(data);
        if (result.errors) note(`stream ${stream.index}: ${data.slice(0, 300)}`);
        else if (stream.kind === 'orders') onOrderEvent(stream, result, receivedAt);
        else onCounterEvent(stream, result);
      }
    }
  };

  /** The chunks an order stream received so far, accounted for in the order they came. */
  const accountForReceived = (stream: Stream) => {
    stream.receivedChunks.forEach((chunk, at) => accountFor(stream, chunk.events, stream.receivedAt[at]!));
    stream.receivedChunks = [];
    stream.receivedAt = [];
  };

  const onCounterEvent = (stream: Stream, result: any) => {
    const counters = result?.data?.salesCounters?.counters;
    if (!counters) return note(`salesCounters: ${JSON.stringify(result).slice(0, 300)}`);
    stream.events += 1;
    stream.lastSold = counters.sold;
    stream.lastAvailable = counters.available;
  };

  /**
   * What one chunk of a stream's body holds, split once for every stream that receives the same
   * bytes at the same flush (streams that follow alike are written the very same pieces): found by
   * its length and first bytes, confirmed by comparing the whole. While the sale runs, an order
   * stream only notes which chunk came when; each event is accounted for (its cursor, order and
   * delay) after the sale, so that the readers take from the sale's two cores only the reading.
   */
  interface Chunk {
    events: SseEvent[];
    /** How many of them are results (`next`). */
    results: number;
    /** Whether one ends the stream or holds errors: accounted for at once. */
    unusual: boolean;
  }
  const chunkOf = (events: SseEvent[]): Chunk => ({
    events,
    results: events.filter(({ event }) => event === 'next').length,
    unusual: events.some(({ event, data }) => event === 'complete' || (event === 'next' && parsed(data).errors !== undefined)),
  });
  const chunks = new Map<string, { bytes: Buffer; chunk: Chunk }>();
  const chunkFor = (bytes: Buffer): Chunk => {
    const key = `${bytes.length} ${bytes.toString('latin1', 0, Math.min(bytes.length, 40))}`;
    const known = chunks.get(key);
    if (known && known.bytes.equals(bytes)) return known.chunk;
    if (chunks.size >= 1_000) chunks.clear();
    const chunk = chunkOf(split(bytes.toString('utf8')));
    chunks.set(key, { bytes: Buffer.from(bytes), chunk });
    return chunk;
  };

  /**
   * One stream over a socket of its own (the API's processes are handed connections in turn),
   * resolved with its client port once its first bytes arrived. The HTTP/1.1 answer is read by
   * hand, chunked framing included: node:http's client costs more per chunk than a thousand
   * streams on a shared machine can spare (a browser reads its one stream on its own machine).
   */
  const openOne = (plan: SubscriberPlan, index: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const kind = index % plan.countersEvery === plan.countersEvery - 1 ? 'counters' : 'orders';
      const body = JSON.stringify(
        kind === 'orders'
          ? { query: ORDER_CHANGED, variables: { accountId: plan.accountId } }
          : { query: COUNTERS, variables: { occurrenceId: plan.occurrenceId } },
      );
      const origin = new URL(plan.origin);
      const socket = net.connect(Number(origin.port), origin.hostname);
      const stream: Stream = {
        kind,
        socket,
        port: 0,
        ended: false,
        events: 0,
        cursorSum: 0,
        fingerprint: 0,
        last: 0,
        descents: 0,
        beforeCreated: 0,
        created: new Uint8Array(1024),
        lastSold: null,
        lastAvailable: null,
        index,
        received: 0,
        receivedAt: [],
        receivedChunks: [],
      };
      let opened = false;
      let failed = false;
      const fail = (error: Error) => {
        stream.ended = true;
        socket.destroy();
        if (!opened && !failed) reject(error);
        else if (!failed) note(`stream ${index}: ${String(error)}`);
        failed = true;
      };
      socket.on('connect', () => {
        stream.port = socket.localPort ?? 0;
        socket.write(
          `POST ${origin.pathname.replace(/\/$/, '')}/graphql HTTP/1.1\r\nHost: ${origin.host}\r\nAccept: text/event-stream\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
            `Authorization: Bearer ${plan.keys[index % plan.keys.length]}\r\nX-Service-Org: ${plan.org}\r\n\r\n${body}`,
        );
      });
      socket.on('error', fail);
      socket.on('close', () => {
        stream.ended = true;
        if (!opened && !failed) fail(new Error(`stream ${index}: closed before it answered`));
      });

      const onChunk = (chunk: Chunk, receivedAt: number) => {
        if (chunk.results > 0) lastEventAt = receivedAt;
        if (kind === 'orders' && !chunk.unusual) {
          stream.received += chunk.results;
          stream.receivedAt.push(receivedAt);
          stream.receivedChunks.push(chunk);
          return;
        }
        if (kind === 'orders') {
          stream.received += chunk.results;
          accountForReceived(stream);
        }
        accountFor(stream, chunk.events, receivedAt);
      };
      // The body's bytes not yet ending in a whole event (rare: the API writes whole events). A
      // blank line ends an event, and a newline byte is never inside a UTF-8 character.
      let partial: Buffer[] = [];
      const onBody = (bytes: Buffer, receivedAt: number) => {
        const whole = bytes.length >= 2 && bytes[bytes.length - 1] === 10 && bytes[bytes.length - 2] === 10;
        if (partial.length === 0 && whole) return onChunk(chunkFor(bytes), receivedAt);
        partial.push(Buffer.from(bytes));
        if (!whole) return;
        const text = Buffer.concat(partial).toString('utf8');
        partial = [];
        onChunk(chunkOf(split(text)), receivedAt);
      };

      // The answer's head, then its chunks: `size` bytes of the current chunk still to come (-1:
      // its size line is next, -2: the CRLF after its bytes).
      let head: Buffer | null = Buffer.alloc(0);
      let size = -1;
      let sizeLine = '';
      socket.on('data', (data: Buffer) => {
        const receivedAt = Date.now();
        let at = 0;
        if (head !== null) {
          const all = Buffer.concat([head, data]);
          const end = all.indexOf('\r\n\r\n');
          if (end < 0) {
            head = all;
            return;
          }
          const lines = all.toString('latin1', 0, end).split('\r\n');
          const status = Number(lines[0]!.split(' ')[1]);
          const type = lines.find((line) => line.toLowerCase().startsWith('content-type:')) ?? '';
          if (status !== 200 || !type.toLowerCase().includes('text/event-stream')) {
            // The refusal as far as it came with its head (enough to say why): the stream fails with it.
            return fail(new Error(`stream ${index}: ${status} ${all.toString('utf8', end + 4).slice(0, 300)}`));
          }
          if (!lines.some((line) => /^transfer-encoding:\s*chunked/i.test(line))) return fail(new Error(`stream ${index}: not chunked`));
          head = null;
          data = all;
          at = end + 4;
          if (!opened) {
            opened = true;
            streams.push(stream);
            resolve(stream.port);
          }
        }
        while (at < data.length) {
          if (size === -1) {
            const lineEnd = data.indexOf('\r\n', at);
            if (lineEnd < 0) {
              sizeLine += data.toString('latin1', at);
              return;
            }
            sizeLine += data.toString('latin1', at, lineEnd);
            size = parseInt(sizeLine, 16);
            sizeLine = '';
            at = lineEnd + 2;
            if (size === 0) {
              stream.ended = true;
              socket.destroy();
              return;
            }
          } else if (size === -2) {
            // The CRLF after a chunk's bytes (it may come in a read of its own).
            at += 1;
            if (data[at - 1] === 10) size = -1;
          } else {
            const take = Math.min(size, data.length - at);
            onBody(data.subarray(at, at + take), receivedAt);
            at += take;
            size -= take;
            if (size === 0) size = -2;
          }
        }
      });
    });

  process.on('message', (message: ToChild) => {
    if (message.type === 'open') {
      const { plan } = message;
      void (async () => {
        const ports: number[] = [];
        let failed = 0;
        let next = 0;
        // 50 at a time: a screen-full of admins opening their pages, not a SYN flood.
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            while (next < plan.count) {
              const index = next++;
              try {
                ports.push(await openOne(plan, index));
              } catch (error) {
                failed += 1;
                note(String(error));
              }
            }
          }),
        );
        cpuAtOpened = process.cpuUsage();
        process.send!({ type: 'opened', ports, failed, errors } satisfies FromChild);
      })();
    } else if (message.type === 'progress') {
      const counts = streams.filter((stream) => stream.kind === 'orders').map((stream) => stream.received);
      process.send!({
        type: 'progress',
        minOrderEvents: counts.length ? Math.min(...counts) : 0,
        maxOrderEvents: counts.length ? Math.max(...counts) : 0,
        lastEventAt,
      } satisfies FromChild);
    } else if (message.type === 'finish') {
      const cpu = process.cpuUsage(cpuAtOpened);
      for (const stream of streams) stream.socket.destroy();
      for (const stream of streams) accountForReceived(stream);
      const sorted = latencies.slice(0, samples).sort();
      const summary: FromChild = {
        type: 'summary',
        orders: streams
          .filter((stream) => stream.kind === 'orders')
          .map(({ events, cursorSum, fingerprint, descents, beforeCreated, ended }) => ({
            events,
            cursorSum,
            fingerprint,
            descents,
            beforeCreated,
            ended,
          })),
        counters: streams
          .filter((stream) => stream.kind === 'counters')
          .map(({ events, lastSold, lastAvailable, ended }) => ({ events, lastSold, lastAvailable, ended })),
        latency: {
          samples,
          p50: percentile(sorted, 50, Math.max(samples, message.expected)),
          p99: percentile(sorted, 99, Math.max(samples, message.expected)),
          max: samples < message.expected ? Infinity : samples ? sorted[samples - 1]! : 0,
          receivedP50: percentile(sorted, 50, samples),
          receivedP99: percentile(sorted, 99, samples),
        },
        errors,
        cpuMs: (cpu.user + cpu.system) / 1000,
      };
      process.send!(summary, () => process.exit(0));
    }
  });
}

if (process.env.BENCH_LIVE_SUBSCRIBERS_CHILD === '1' && process.argv[1] === fileURLToPath(import.meta.url)) runChild();
