import { z } from 'zod';

/**
 * Time zones and wall-clock times. Occurrences are stored as instants; clients speak in dates and
 * times of day in the event's IANA zone. Intl knows every zone's offsets, so no library is needed.
 */

/**
 * An IANA time zone name, stored in its canonical spelling (`europe/london` -> `Europe/London`,
 * `Etc/UTC` -> `UTC`, `US/Eastern` -> `America/New_York`). Fixed offsets such as `+01:00` are
 * refused: they do not follow daylight saving time.
 */
export const timeZone = z
  .string()
  .max(64)
  .transform((value, ctx) => {
    if (/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(value)) {
      try {
        return new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone;
      } catch {
        // fall through to the issue below
      }
    }
    ctx.addIssue({ code: 'custom', message: `"${value.slice(0, 64)}" is not an IANA time zone name such as Europe/London or UTC` });
    return z.NEVER;
  });

/**
 * The instants the service stores and compares: years 1 to 9999 in UTC, what PostgreSQL's timestamp
 * and an ISO 8601 answer both hold (year 0 is neither's, year 10000 is not four digits).
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

export function withinRange(at: Date): boolean {
  return at.getTime() >= EARLIEST && at.getTime() <= LATEST;
}

/** A calendar date, YYYY-MM-DD, that exists, in years 1 to 9999. */
export const localDate = z.iso
  .date({ error: 'a date as YYYY-MM-DD' })
  .refine((value) => !value.startsWith('0000-'), 'a date between 0001-01-01 and 9999-12-31');
/** A time of day, HH:MM on a 24-hour clock. */
export const localTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a time of day as HH:MM (00:00 to 23:59)');
/** An instant: ISO 8601 date and time with Z or an offset, in years 1 to 9999 (UTC). */
export const instant = z.iso
  .datetime({ offset: true, error: 'an ISO 8601 date and time with Z or an offset, e.g. 2026-07-04T19:30:00+01:00' })
  .transform((value) => new Date(value))
  .refine(withinRange, 'an instant between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z');

/** Milliseconds of a UTC calendar time, for every year (Date.UTC reads years 0 to 99 as 1900 to 1999). */
function utc(year: number, monthIndex: number, day: number, hour = 0, minute = 0, second = 0): number {
  const at = new Date(0);
  at.setUTCFullYear(year, monthIndex, day);
  at.setUTCHours(hour, minute, second, 0);
  return at.getTime();
}

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, format);
  }
  return format;
}

/**
 * Answers of wallClockMs, a pure function of its arguments: every listing and event page converts
 * the same few occurrence times again, and Intl's formatToParts was ~3% of a listing request's
 * CPU. Bounded: cleared whole when full.
 */
const wallClocks = new Map<string, number>();
const MAX_WALL_CLOCKS = 10_000;

/** The wall clock of `ms` in `zone`, read as if it were UTC (whole seconds). */
function wallClockMs(ms: number, zone: string): number {
  const key = `${zone} ${ms}`;
  let wall = wallClocks.get(key);
  if (wall === undefined) {
    if (wallClocks.size >= MAX_WALL_CLOCKS) wallClocks.clear();
    wall = computeWallClockMs(ms, zone);
    wallClocks.set(key, wall);
  }
  return wall;
}

function computeWallClockMs(ms: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(ms))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return utc(parts.year!, parts.month! - 1, parts.day!, parts.hour, parts.minute, parts.second);
}

/** UTC offset of `zone` at instant `ms`, in milliseconds (positive east of Greenwich). */
export function zoneOffsetMs(ms: number, zone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return wallClockMs(whole, zone) - whole;
}

/**
 * Every instant whose wall clock in `zone` reads `date` `time`: one normally, two in the hour
 * repeated when clocks go back (earlier first), none in the hour skipped when they go forward.
 * Zones change offset at most once in two days, so the offsets a day either side are the only
 * candidates.
 */
export function instantsAt(date: string, time: string, zone: string): Date[] {
  const [year, month, day] = date.split('-').map(Number);
  const [hour, minute] = time.split(':').map(Number);
  const wall = utc(year!, month! - 1, day!, hour, minute);
  const offsets = new Set([zoneOffsetMs(wall - DAY_MS, zone), zoneOffsetMs(wall, zone), zoneOffsetMs(wall + DAY_MS, zone)]);
  const found = [...offsets].map((offset) => wall - offset).filter((ms) => ms + zoneOffsetMs(ms, zone) === wall);
  return [...new Set(found)].sort((a, b) => a - b).map((ms) => new Date(ms));
}

/**
 * The first instant of `date` in `zone`: its midnight, or when midnight is skipped by a clock
 * change, the moment the clocks jump to.
 */
export function startOfLocalDay(date: string, zone: string): Date {
  const [first] = instantsAt(date, '00:00', zone);
  if (first) return first;
  const [year, month, day] = date.split('-').map(Number);
  const wall = utc(year!, month! - 1, day!);
  return new Date(wall - zoneOffsetMs(wall - DAY_MS, zone));
}

/** The calendar date and time of day (HH:MM) of `at` in `zone`. */
export function localParts(at: Date, zone: string): { date: string; time: string } {
  const iso = new Date(wallClockMs(at.getTime(), zone)).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 16) };
}

/** `date` plus `days` days, as YYYY-MM-DD. */
export function addDays(date: string, days: number): string {
  const [year, month, day] = date.split('-').map(Number);
  return new Date(utc(year!, month! - 1, day! + days)).toISOString().slice(0, 10);
}
