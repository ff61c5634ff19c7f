/**
 * Headless Chromium for the browser tests, driven by playwright-core. The browser is Debian's
 * `chromium` package: installed here with apt-get when /usr/bin/chromium is missing (CI runs as
 * root with apt reachable), so `npm ci && npm test` needs nothing else. The flags keep it off the
 * network (no component updates, sync, QUIC or background requests) on a closed host.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chromium, type BrowserContext, type BrowserContextOptions } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Installs Debian's chromium when it is missing; throws saying what to do when that fails. */
export function ensureChromium(): string {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  try {
    execFileSync('apt-get', ['update'], { stdio: 'pipe', timeout: 180_000 });
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
      stdio: 'pipe',
      timeout: 360_000,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (err) {
    const output = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).slice(-2000);
    throw new Error(`the browser tests need Chromium at ${CHROMIUM}; installing it with apt-get failed (run as root with apt reachable, or run 'apt-get install -y chromium' yourself):\n${output}`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is still missing`);
  return CHROMIUM;
}

/** A fresh headless browser context with its own profile directory; close() removes the profile. */
export async function launchChromium(options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const executablePath = ensureChromium();
  const profile = mkdtempSync(path.join(os.tmpdir(), 'decide-chromium-'));
  // The profile directory is playwright's userDataDir (it passes --user-data-dir itself).
  const context = await chromium.launchPersistentContext(profile, {
    ...options,
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
