/**
 * Waits for the next minute when the current one ends within `marginMs`. The rate limiter counts in
 * clock-aligned minutes (src/limits/rate-limiter.ts): requests that straddle a minute's end are two
 * windows' worth, so a burst a test counts starts early enough in one.
 */
export async function freshMinute(marginMs = 20_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
