import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseRadioSpec } from '../../hub/settings.js';
import { parseDuration } from '../../src/config/fields.js';
import { configProblems } from '../helpers/config.js';

const problemsOf = (env: NodeJS.ProcessEnv) => configProblems(() => loadConfig(env));

describe('loadConfig', () => {
  it('gives the documented defaults with an empty environment', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      DATA_DIR: './data',
      HTTP_HOST: '0.0.0.0',
      HTTP_PORT: 8080,
      RADIO: { kind: 'auto' },
      LOG_LEVEL: 'info',
      READINGS_RETENTION_DAYS: 90,
      PLUGINS: [],
    });
  });

  it('reads values from the environment and parses them', () => {
    const c = loadConfig({
      HTTP_PORT: '9000',
      RADIO: 'tcp:meshtastic.local',
      PLUGINS: 'audit, billing',
      SIM_BACKFILL: '30d',
      SIM_CENTER: '-33.86, 151.2',
    });
    expect(c.HTTP_PORT).toBe(9000);
    expect(c.RADIO).toEqual({ kind: 'tcp', host: 'meshtastic.local', port: 4403 });
    expect(c.PLUGINS).toEqual(['audit', 'billing']);
    expect(c.SIM_BACKFILL).toBe(30 * 86_400_000);
    expect(c.SIM_CENTER).toEqual({ latitude: -33.86, longitude: 151.2 });
  });

  it('reports every invalid value at once, each by name', () => {
    const problems = problemsOf({
      HTTP_PORT: '70000',
      RADIO: 'bluetooth',
      LOG_LEVEL: 'loud',
      READINGS_RETENTION_DAYS: 'forever',
      SIM_BACKFILL: '3 weeks',
    });
    const names = problems.map((p) => p.split(':')[0]);
    expect(names.sort()).toEqual([
      'HTTP_PORT',
      'LOG_LEVEL',
      'RADIO',
      'READINGS_RETENTION_DAYS',
      'SIM_BACKFILL',
    ]);
    expect(problems.find((p) => p.startsWith('RADIO'))).toContain('"bluetooth"');
  });

  it('merges a JSON config file, with the environment winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-config-'));
    const file = join(dir, 'meshhub.json');
    writeFileSync(file, JSON.stringify({ HTTP_PORT: 8181, DATA_DIR: '/var/lib/meshhub' }));
    const c = loadConfig({ CONFIG_FILE: file, HTTP_PORT: '8282' });
    expect(c.HTTP_PORT).toBe(8282);
    expect(c.DATA_DIR).toBe('/var/lib/meshhub');
  });

  it('rejects unknown keys and unreadable files in CONFIG_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-config-'));
    const file = join(dir, 'meshhub.json');
    writeFileSync(file, JSON.stringify({ HTTP_PROT: 1 }));
    expect(problemsOf({ CONFIG_FILE: file })).toEqual(['HTTP_PROT: unknown setting in CONFIG_FILE']);
    writeFileSync(file, '{not json');
    expect(problemsOf({ CONFIG_FILE: file })[0]).toMatch(/^CONFIG_FILE: cannot read/);
  });
});

describe('parseRadioSpec', () => {
  it.each([
    ['auto', { kind: 'auto' }],
    ['sim', { kind: 'sim' }],
    ['none', { kind: 'none' }],
    ['serial:/dev/ttyUSB0', { kind: 'serial', path: '/dev/ttyUSB0', baudRate: 115200 }],
    ['serial:/dev/ttyACM0@921600', { kind: 'serial', path: '/dev/ttyACM0', baudRate: 921600 }],
    ['tcp:192.0.2.1:4404', { kind: 'tcp', host: '192.0.2.1', port: 4404 }],
    ['tcp:[::1]', { kind: 'tcp', host: '::1', port: 4403 }],
  ])('%s', (input, expected) => {
    expect(parseRadioSpec(input)).toEqual(expected);
  });

  it.each(['serial:ttyUSB0', 'tcp:', 'tcp:host:99999', 'usb', 'serial:/dev/x@fast'])(
    'rejects %s',
    (input) => {
      expect(typeof parseRadioSpec(input)).toBe('string');
    },
  );
});

describe('parseDuration', () => {
  it('parses s, m, h, d and rejects the rest', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('24h')).toBe(86_400_000);
    expect(parseDuration('0s')).toBe(0);
    expect(parseDuration('1w')).toBeUndefined();
    expect(parseDuration('-1h')).toBeUndefined();
  });
});
