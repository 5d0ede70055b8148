/**
 * MQTT password logins against the real hub's broker go through the hub's one login throttle
 * (issue 23, finding 4): a flood of wrong passwords is refused with CONNACK 3 before any password
 * is checked (counted by a spy on the user store, not by timing), and the same (username,
 * address) then waits on HTTP too. Hub-issued tokens sent as the MQTT password are refused once
 * revoked.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import { call } from '../messaging/helpers.js';
import { connect, endClients, type MqttTestHub, metricValue, refusedCode, startMqttHub } from './helpers.js';

const PASSWORD = 'correct horse battery';
let t: MqttTestHub;

beforeAll(async () => {
  t = await startMqttHub(
    {},
    {
      users: [
        { username: 'sensor', password: PASSWORD, roles: ['device'] },
        { username: 'gauge', password: PASSWORD, roles: ['device'] },
      ],
    },
  );
});
afterEach(async () => {
  vi.restoreAllMocks();
  await endClients();
});
afterAll(() => t.stop());

const metric = (name: string, labels: string) => metricValue(t.baseUrl, name, labels);

describe('MQTT password logins', () => {
  it('refuses a flood of wrong passwords with CONNACK 3 and no password check after the first few', async () => {
    const checks = vi.spyOn(HubUserService.prototype, 'checkPassword');
    const codes: number[] = [];
    for (let i = 0; i < 40; i++) {
      codes.push(await refusedCode(t.mqttUrl, { username: 'sensor', password: `guess-${i}` }));
    }
    expect(codes.slice(0, 3)).toEqual([4, 4, 4]);
    expect(codes.slice(3).every((code) => code === 3)).toBe(true);
    expect(checks).toHaveBeenCalledTimes(3);
    expect(await metric('meshhub_mqtt_auth_failures_total', 'reason="throttled"')).toBe(37);
    // One throttle for both: the same username from the same address waits on HTTP too.
    const http = await call(t.baseUrl, 'POST', '/api/v1/auth/token', {
      body: { username: 'sensor', password: PASSWORD },
    });
    expect(http.status).toBe(429);
    expect(Number(http.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(checks).toHaveBeenCalledTimes(3);
    // Another account is not held back by it.
    const client = await connect(t.mqttUrl, { username: 'gauge', password: PASSWORD });
    expect(client.connected).toBe(true);
  });
});

describe('hub-issued tokens as the MQTT password', () => {
  it('are refused once the user is removed or their tokens revoked; a fresh token works', async () => {
    const users = new HubUserService(t.hub.store.db);
    await users.add({ username: 'relay', password: PASSWORD, roles: ['device'] });
    const tokenOf = async (username: string) => {
      const user = (await users.get(username))!;
      const issued = await t.hub.identity.localIssuer.issue(
        { ...user, tokenVersion: (await users.tokenVersion(username))! },
        600,
      );
      return issued.accessToken;
    };
    const before = await tokenOf('relay');
    expect((await connect(t.mqttUrl, { username: 'relay', password: before })).connected).toBe(true);
    await users.revokeTokens('relay');
    expect(await refusedCode(t.mqttUrl, { username: 'relay', password: before })).toBe(4);
    const fresh = await tokenOf('relay');
    expect((await connect(t.mqttUrl, { username: 'relay', password: fresh })).connected).toBe(true);
    await users.remove('relay');
    expect(await refusedCode(t.mqttUrl, { username: 'relay', password: fresh })).toBe(4);
    expect(await metric('meshhub_mqtt_auth_failures_total', 'reason="bad_token"')).toBeGreaterThanOrEqual(2);
  });
});
