// A real redis-server with the xset module on a free loopback port. The
// module is XSET_MODULE, else target/release/libxset.so at the repository
// root; the server is XSET_SERVER, else redis-server on PATH. Readiness is
// waited on (PING), never slept for.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../../../..');

function modulePath(): string {
  const path = resolve(process.env.XSET_MODULE || join(ROOT, 'target/release/libxset.so'));
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: cargo build --release --features fault-injection at the repository root, or name the module in XSET_MODULE`);
  }
  return path;
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

/** Whether a server answers PING +PONG on `port`. */
function pong(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const sock = connect(port, '127.0.0.1');
    let data = '';
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      data += d;
      if (data.includes('\r\n')) {
        sock.destroy();
        ok(data.startsWith('+PONG'));
      }
    });
    sock.on('error', () => ok(false));
  });
}

export interface Server {
  port: number;
  stop(): void;
}

export async function startServer(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'xset-node-'));
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const proc: ChildProcess = spawn(
      process.env.XSET_SERVER || 'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
        '--dir', dir, '--loadmodule', modulePath()],
      { stdio: 'ignore' },
    );
    let exited = false;
    proc.on('exit', () => { exited = true; });
    const deadline = Date.now() + 10_000;
    while (!exited && Date.now() < deadline) {
      if (await pong(port)) {
        return { port, stop: () => { proc.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); } };
      }
      await new Promise((r) => setTimeout(r, 20)); // poll interval, not a wait for state
    }
    proc.kill('SIGKILL');
  }
  throw new Error('redis-server did not start');
}
