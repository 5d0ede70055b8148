/**
 * A taken MQTT_PORT stops the start at once, naming MQTT_PORT (README "Configuration"): no silent
 * move to another port that gateways do not know, and no restarts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { createHub } from '../../hub/main.js';
import { loadConfig } from '../../hub/settings.js';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import { StartupFailure } from '../../src/kernel/startup-failure.js';

let blocker: Server;
const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-mqtt-port-'));
afterAll(async () => {
  await new Promise((r) => blocker.close(r));
  rmSync(dataDir, { recursive: true, force: true });
});

it('fails the start when MQTT_PORT is taken, naming MQTT_PORT and what to do', async () => {
  blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const taken = (blocker.address() as { port: number }).port;
  const config = loadConfig({ ...loopbackListeners(dataDir), RADIO: 'none', MQTT_PORT: String(taken) });
  const hub = await createHub(config, { log: pino({ level: 'silent' }), defaultMetrics: false });
  const started = hub.start();
  await expect(started).rejects.toBeInstanceOf(StartupFailure);
  await expect(started).rejects.toThrow(
    `MQTT_PORT ${taken} on 127.0.0.1 is in use by another program: stop it or set MQTT_PORT`,
  );
  expect(hub.supervisor.status().find((a) => a.name === 'mqtt')).toMatchObject({
    state: 'failed',
    restarts: 0,
  });
  await hub.stop();
});
