import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/**
 * A real headless Chromium for tests that drive pages as a buyer would (the hosted checkout).
 * playwright-core brings no browser, and Playwright's own download is unreachable from our machines,
 * so we drive the system's Chromium (Debian's `chromium`, installed by scripts/ensure-chromium.sh,
 * which `npm test` runs and whose answer it passes in CHROMIUM_PATH).
 */
export async function launchBrowser(): Promise<Browser> {
  const fromEnv = process.env.CHROMIUM_PATH;
  const executablePath = fromEnv ? (isExecutable(fromEnv) ? fromEnv : undefined) : findChromium();
  if (!executablePath) {
    const why = fromEnv
      ? `CHROMIUM_PATH=${fromEnv} is not an executable`
      : 'CHROMIUM_PATH is unset and none of chromium, chromium-browser, google-chrome is on PATH';
    throw new Error(
      `No Chromium for the browser tests: ${why}. Run \`bash scripts/ensure-chromium.sh\` (it installs ` +
        "Debian's chromium when missing and prints its path), or set CHROMIUM_PATH to a Chromium executable.",
    );
  }
  return chromium.launch({
    executablePath,
    // Containers run us as root, where Chromium's sandbox cannot start; there is no GPU either.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
  });
}

/** The search of scripts/ensure-chromium.sh, for runs without `npm test` (plain `npx vitest`). */
function findChromium(): string | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const candidates = ['chromium', 'chromium-browser', 'google-chrome'].flatMap((name) => dirs.map((dir) => path.join(dir, name)));
  return [...candidates, '/usr/bin/chromium'].find(isExecutable);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
