/**
 * HTTP_COMPONENT_PORTS: beside the main port, one listener per component of the spec, each
 * serving only its component's routes (ingestion 8001, weather 8002, gateway 8003, billing 8004).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseComponentPorts } from '../../hub/settings.js';
import { localIssuer, type MqttTestHub, startMqttHub } from '../mqtt/helpers.js';

let t: MqttTestHub;
let token: string;

beforeAll(async () => {
  const issuer = await localIssuer();
  token = await issuer.token(['ingest']);
  t = await startMqttHub(
    { HTTP_COMPONENT_PORTS: 'ingestion=0,weather=0,gateway=0,billing=0' },
    { tokenVerifier: issuer.verifier },
  );
});
afterAll(() => t.stop());

const url = (component: 'ingestion' | 'weather' | 'gateway' | 'billing', path: string) =>
  `http://127.0.0.1:${t.hub.http.componentPort(component)}${path}`;

const ingest = (base: string, nodeId = 'port-test') =>
  fetch(`${base}/api/v1/ingest/readings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ node_id: nodeId, temperature_c: 5 }),
  });

describe('component ports', () => {
  it('serves ingestion on the ingestion port only', async () => {
    expect((await ingest(url('ingestion', ''))).status).toBe(202);
    expect((await ingest(url('weather', ''))).status).toBe(404);
    expect((await fetch(url('ingestion', '/api/v1/weather/latest'))).status).toBe(404);
  });

  it('serves the weather and nodes routes on the weather port only', async () => {
    expect((await ingest(t.baseUrl, 'weather-port-test')).status).toBe(202);
    const latest = await fetch(url('weather', '/api/v1/weather/latest?node_id=weather-port-test'));
    expect(latest.status).toBe(200);
    expect(((await latest.json()) as { data: unknown[] }).data).toHaveLength(1);
    expect((await fetch(url('weather', '/api/v1/nodes'))).status).toBe(200);
    expect((await fetch(url('gateway', '/api/v1/weather/latest'))).status).toBe(404);
    expect((await fetch(url('billing', '/api/v1/nodes'))).status).toBe(404);
  });

  it('keeps serving everything on the main port', async () => {
    expect((await ingest(t.baseUrl)).status).toBe(202);
    expect((await fetch(`${t.baseUrl}/api/v1/weather/latest`)).status).toBe(200);
  });

  it('answers 404 as problem details on a component port', async () => {
    const r = await fetch(url('billing', '/api/v1/weather/latest'));
    expect(r.headers.get('content-type')).toBe('application/problem+json');
  });

  it('reports the ports in /health', async () => {
    const health = (await (await fetch(`${t.baseUrl}/health`)).json()) as {
      actors: Array<Record<string, unknown>>;
    };
    const http = health.actors.find((a) => a.name === 'http');
    expect(http?.component_ports).toEqual({
      ingestion: t.hub.http.componentPort('ingestion'),
      weather: t.hub.http.componentPort('weather'),
      gateway: t.hub.http.componentPort('gateway'),
      billing: t.hub.http.componentPort('billing'),
    });
  });
});

describe('HTTP_COMPONENT_PORTS', () => {
  it('true means the spec ports, false none, and pairs pick their own', () => {
    expect(parseComponentPorts('true')).toEqual({
      ingestion: 8001,
      weather: 8002,
      gateway: 8003,
      billing: 8004,
    });
    expect(parseComponentPorts(false)).toEqual({});
    expect(parseComponentPorts('ingestion=18001,weather=18002')).toEqual({
      ingestion: 18001,
      weather: 18002,
    });
    expect(parseComponentPorts('ingestion=70000')).toMatch(/expected true, false or component=port pairs/);
    expect(parseComponentPorts('mqtt=1883')).toMatch(/expected/);
  });
});
