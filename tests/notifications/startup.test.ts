/**
 * Bad notification settings and a damaged VAPID key file, as a person meets them: `meshhub start`
 * exits non-zero with plain lines naming each setting (or the file) and what to do, no stack.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtCliScratch, meshhubCli } from '../helpers/cli.js';

const root = builtCliScratch('meshhub-notify-start-');

const start = (dataDir: string, env: Record<string, string> = {}) =>
  meshhubCli(['start'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: root,
      DATA_DIR: dataDir,
      RADIO: 'none',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      MQTT_PORT: '0',
      MESH_API_PORT: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdin: '',
  });

describe('meshhub start with notification settings', () => {
  it('names each bad setting in plain words, without a stack', async () => {
    const r = await start(join(root, 'bad-settings'), {
      NOTIFY_WEBHOOK_URL: 'http://ntfy.example.org/mesh',
      NOTIFY_QUIET_HOURS: '25:00-07:00',
      NOTIFY_TIME_ZONE: 'Mars/Olympus',
      VAPID_SUBJECT: 'someone',
    });
    expect(r.code).not.toBe(0);
    for (const setting of ['NOTIFY_WEBHOOK_URL', 'NOTIFY_QUIET_HOURS', 'NOTIFY_TIME_ZONE', 'VAPID_SUBJECT'])
      expect(r.err).toContain(setting);
    expect(r.err).toContain('22:00-07:00');
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('refuses a damaged VAPID key file in one line naming it, and never replaces it', async () => {
    const dataDir = join(root, 'damaged');
    mkdirSync(dataDir, { recursive: true });
    const file = join(dataDir, 'vapid-keys.json');
    writeFileSync(file, 'not json');
    const r = await start(dataDir);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(`${file} is not a VAPID key file`);
    expect(r.err).not.toMatch(/\n\s+at /);
    expect(statSync(file).size).toBe('not json'.length);
  });
});
