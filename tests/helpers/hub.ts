import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createHub, type Hub } from '../../hub/main.js';
import { type HubConfig, loadConfig } from '../../hub/settings.js';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import type { MqttBrokerActor } from '../../src/mqtt/broker-actor.js';

export interface TestHub {
  hub: Hub;
  dataDir: string;
  baseUrl: string;
  stop(): Promise<void>;
}

/**
 * A whole hub in this process: a real SQLite file in a temp dir, the simulator on a free
 * loopback port reached over TCP, HTTP on a free loopback port.
 */
export async function startTestHub(env: Record<string, string> = {}): Promise<TestHub> {
  const { dataDir, config } = tempHubConfig('test', { RADIO: 'sim', SIM_BACKFILL: '6h', ...env });
  const hub = await createHub(config, {
    log: pino({ level: 'silent' }),
    defaultMetrics: false,
    env: { ...process.env, ...env },
  });
  await hub.start();
  return testHubOf(hub, dataDir);
}

/**
 * The settings of a hub in this process: its data in a new temp dir (`meshhub-<name>-…`), HTTP,
 * MQTT and the mesh API on free loopback ports, the simulator (when RADIO says so) on one too, no
 * logs; `env` adds or overrides settings.
 */
export function tempHubConfig(
  name: string,
  env: Record<string, string>,
): { dataDir: string; config: HubConfig } {
  const dataDir = mkdtempSync(join(tmpdir(), `meshhub-${name}-`));
  const config = loadConfig({ ...loopbackListeners(dataDir), SIM_PORT: '0', LOG_LEVEL: 'silent', ...env });
  return { dataDir, config };
}

/**
 * The TestHub of `hub`, started on `dataDir`: stop() stops it once, then removes `dataDir` unless
 * `keepData` (a test that starts a hub on it again removes it itself).
 */
export function testHubOf(hub: Hub, dataDir: string, keepData = false): TestHub {
  let stopped = false;
  return {
    hub,
    dataDir,
    baseUrl: `http://127.0.0.1:${hub.http.port}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await hub.stop();
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function waitFor<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  what: string | (() => string) = 'condition',
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until)
      throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies of many shapes and assert on them
export async function getJson(url: string): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** A TCP port free on loopback right now (for a hub started as a separate process). */
export { freePort } from '../../scripts/bench/lib/hub-process.js';

/** Ports restartablePort gave this process already (each is closed again before it is used). */
const handedOut = new Set<number>();

/**
 * A loopback port free right now and below the kernel's ephemeral range, for a hub that is killed
 * and started again on the same ports: a port from that range (what `freePort` gives) can become
 * the local end of some other process's outgoing connection while the hub is down, and the
 * restart then finds it in use (seen in the reliability suite, with the soak's clients beside it).
 */
export async function restartablePort(): Promise<number> {
  let low = 32768;
  try {
    low =
      Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: keep the usual lower bound
  }
  const from = 10_000;
  const span = Math.max(1, low - from);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = from + Math.floor(Math.random() * span);
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free loopback port between ${from} and ${low}`);
}

/** The hub's MQTT broker actor (port, settle). */
export function mqttOf(hub: Hub): MqttBrokerActor {
  const actor = hub.actor<MqttBrokerActor>('mqtt');
  if (!actor) throw new Error('this hub runs no MQTT broker');
  return actor;
}
