/**
 * The Containerfile and the compose files agree with the hub a person runs from them, without
 * building anything (the image itself: image.test.ts): every setting they set is one the hub (or
 * the upstream) knows and accepts, the data volume is DATA_DIR, the published ports are the
 * image's, both health checks probe /health the same way, and the image starts node with the
 * hub's V8 flags.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HUB_NODE_FLAGS } from '../../hub/node-flags.js';
import { configSchema, loadConfig } from '../../hub/settings.js';
import { loadUpstreamSettings, upstreamSettings } from '../../sync/upstream/settings.js';

const read = (name: string) => readFileSync(join(process.cwd(), name), 'utf8');

interface Instruction {
  op: string;
  args: string;
}

/** The runtime stage's instructions (after the last FROM), continuation lines joined. */
function runtimeStage(): Instruction[] {
  const lines = read('Containerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
  const all = lines.map((l) => {
    const [op = '', ...rest] = l.trim().split(/\s+/);
    return { op: op.toUpperCase(), args: rest.join(' ') };
  });
  return all.slice(all.map((i) => i.op).lastIndexOf('FROM'));
}

function containerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of runtimeStage().filter((i) => i.op === 'ENV'))
    for (const [, key, value] of args.matchAll(/([A-Z_]+)=(\S+)/g)) env[key as string] = value as string;
  return env;
}

const jsonArgs = (op: string) => {
  const found = runtimeStage().find((i) => i.op === op);
  if (!found) throw new Error(`the Containerfile has no ${op}`);
  return found.args;
};

/** NODE_ENV is Node's, not a hub setting. */
const settingsOf = (env: Record<string, string>) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => k !== 'NODE_ENV'));

describe('Containerfile', () => {
  it('sets only settings the hub knows, with values it accepts', () => {
    const env = settingsOf(containerEnv());
    const known = Object.keys(configSchema.shape);
    expect(Object.keys(env).filter((k) => !known.includes(k))).toEqual([]);
    const config = loadConfig(env);
    expect(config.DATA_DIR).toBe('/data');
    expect(config.HTTP_HOST).toBe('0.0.0.0');
  });

  it('keeps DATA_DIR in the volume and exposes the HTTP and MQTT ports it sets', () => {
    const env = containerEnv();
    expect(JSON.parse(jsonArgs('VOLUME'))).toEqual([env.DATA_DIR]);
    expect(jsonArgs('EXPOSE').split(' ').sort()).toEqual([env.HTTP_PORT, env.MQTT_PORT].sort());
  });

  it('runs the hub as a user other than root, starting node with the hub V8 flags', () => {
    expect(jsonArgs('USER')).not.toMatch(/^(root|0)(:|$)/);
    const entry = JSON.parse(jsonArgs('ENTRYPOINT')) as string[];
    expect(entry[0]).toBe('node');
    expect(entry.filter((a) => a.startsWith('--'))).toEqual([...HUB_NODE_FLAGS]);
    expect(entry.at(-1)).toMatch(/dist\/hub\/cli\.js$/);
    expect(JSON.parse(jsonArgs('CMD'))).toEqual(['start']);
  });
});

describe('compose files', () => {
  const hubCompose = parse(read('compose.yaml'));
  const upstreamCompose = parse(read('compose.upstream.yaml'));
  const healthProbe = () => {
    const args = jsonArgs('HEALTHCHECK');
    return JSON.parse(args.slice(args.indexOf('CMD') + 3).trim()) as string[];
  };

  it('compose.yaml runs the image with settings the hub accepts and the data in a named volume', () => {
    const hub = hubCompose.services.hub;
    expect(hub.image).toMatch(/^meshhub:/);
    expect(hub.build.dockerfile).toBe('Containerfile');
    expect(hub.restart).toBe('unless-stopped');
    const env = { ...settingsOf(containerEnv()), ...hub.environment };
    const known = Object.keys(configSchema.shape);
    expect(Object.keys(hub.environment).filter((k) => !known.includes(k))).toEqual([]);
    const config = loadConfig(env);
    const [volume, target] = String(hub.volumes[0]).split(':');
    expect(target).toBe(config.DATA_DIR);
    expect(Object.keys(hubCompose.volumes)).toContain(volume);
    const published = (hub.ports as string[]).map((p) => Number(p.split(':').at(-1)));
    expect(published.sort()).toEqual([config.HTTP_PORT, config.MQTT_PORT].sort());
  });

  it('both compose files probe /health as the image does', () => {
    const probe = ['CMD', ...healthProbe()];
    expect(hubCompose.services.hub.healthcheck.test).toEqual(probe);
    expect(upstreamCompose.services.upstream.healthcheck.test).toEqual(probe);
  });

  it('compose.upstream.yaml wires the upstream to its PostgreSQL with settings it accepts', () => {
    const { postgres, upstream } = upstreamCompose.services;
    expect(postgres.image).toMatch(/postgres:15$/);
    expect(String(postgres.volumes[0])).toMatch(/:\/var\/lib\/postgresql\/data$/);
    expect(upstream.command).toEqual(['upstream']);
    expect(upstream.depends_on.postgres.condition).toBe('service_healthy');
    const password = 'from-the-environment';
    const env: Record<string, string> = Object.fromEntries(
      Object.entries(upstream.environment as Record<string, string>).map(([k, v]) => [
        k,
        v.replace(/\$\{POSTGRES_PASSWORD[^}]*\}/g, password),
      ]),
    );
    const known = Object.keys(upstreamSettings.shape);
    expect(Object.keys(env).filter((k) => !known.includes(k))).toEqual([]);
    const settings = loadUpstreamSettings(env);
    expect(settings.HTTP_HOST).toBe('0.0.0.0');
    const url = new URL(env.UPSTREAM_DATABASE_URL as string);
    expect(url.hostname).toBe('postgres');
    expect(decodeURIComponent(url.username)).toBe(postgres.environment.POSTGRES_USER);
    expect(url.password).toBe(password);
    expect(url.pathname).toBe(`/${postgres.environment.POSTGRES_DB}`);
    const [volume, target] = String(upstream.volumes[0]).split(':');
    expect(target).toBe(settings.DATA_DIR);
    expect(Object.keys(upstreamCompose.volumes)).toContain(volume);
  });
});
