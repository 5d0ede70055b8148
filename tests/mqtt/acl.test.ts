/**
 * The role table (src/mqtt/acl.ts), the topic matching behind it, the authenticator's safe
 * defaults and the packet size guard, without a broker.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ModuleTopics } from '../../hub/module-host.js';
import { hasMqttRole, mayPublish, maySubscribe } from '../../src/mqtt/acl.js';
import { MqttAuthenticator, MqttAuthFailure } from '../../src/mqtt/authenticator.js';
import { MqttPacketSizeGuard } from '../../src/mqtt/packet-size-guard.js';
import { filterWithin, haSafeId, ModuleTopicRules, topicMatches } from '../../src/mqtt/topics.js';

describe('ACL', () => {
  it.each([
    [['device'], 'msh/EU_868/2/e/LongFast/!01020304', true],
    [['device'], 'meshhub/ingest/readings', true],
    [['ingest'], 'meshhub/ingest/readings', true],
    [['device'], 'meshhub/readings/!01020304', false],
    [['device'], 'homeassistant/status', false],
    [['device'], 'elsewhere', false],
    [['integration'], 'meshhub/ingest/readings', false],
    [['integration'], 'homeassistant/status', true],
    [['integration'], 'homeassistant/sensor/x/temperature_c/config', false],
    [['admin'], 'meshhub/ingest/readings', true],
    [['admin'], 'meshhub/status', false],
    [['admin'], 'meshhub/nodes/!01020304', false],
    [['admin'], 'meshhub/messages/1', false],
    [['admin'], '$SYS/x', false],
    [['subscriber'], 'meshhub/ingest/readings', false],
  ])('%j may publish %s: %s', (roles, topic, allowed) => {
    expect(mayPublish(roles, topic)).toBe(allowed);
  });

  it.each([
    [['integration'], 'meshhub/#', true],
    [['integration'], 'meshhub/readings/+', true],
    [['integration'], 'homeassistant/#', true],
    [['integration'], '#', false],
    [['integration'], '+/readings/#', false],
    [['integration'], 'msh/#', false],
    [['integration'], '$SYS/#', false],
    [['device'], 'msh/EU_868/2/e/LongFast/#', true],
    [['device'], 'meshhub/#', false],
    [['admin'], '#', true],
    [['admin'], '$SYS/#', true],
    [['subscriber'], 'meshhub/#', false],
  ])('%j may subscribe %s: %s', (roles, filter, allowed) => {
    expect(maySubscribe(roles, filter)).toBe(allowed);
  });

  it('knows which roles are MQTT roles', () => {
    expect(hasMqttRole(['subscriber'])).toBe(false);
    expect(hasMqttRole(['subscriber', 'integration'])).toBe(true);
  });

  it('property: a filter within a pattern never matches a topic outside it', () => {
    const level = fc.constantFrom('meshhub', 'msh', 'readings', 'x', 'homeassistant', '+');
    const filterArb = fc
      .tuple(fc.array(level, { minLength: 1, maxLength: 4 }), fc.boolean())
      .map(([levels, hash]) => [...levels, ...(hash ? ['#'] : [])].join('/'));
    const topicArb = fc
      .array(fc.constantFrom('meshhub', 'msh', 'readings', 'x', 'homeassistant', 'y'), {
        minLength: 1,
        maxLength: 5,
      })
      .map((l) => l.join('/'));
    const allowed = ['meshhub', '#'];
    fc.assert(
      fc.property(filterArb, topicArb, (filter, topic) => {
        if (filterWithin(filter, allowed) && topicMatches(filter.split('/'), topic)) {
          expect(topicMatches(allowed, topic)).toBe(true);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('module topics (ctx.mqtt.topic)', () => {
  const registry = new ModuleTopics();
  const rules = new ModuleTopicRules(registry);

  it('are published by the hub alone, forwarded to admins only, and refused by name only when the module says so', () => {
    expect(rules.isAdminOnly('meshhub/billing/alice')).toBe(false);
    registry.declare('billing', 'meshhub/billing/#', { readers: 'admin' });
    registry.declare('audit', 'meshhub/audit/#', { readers: 'admin', refuseOthers: true });
    for (const roles of [['admin'], ['integration'], ['device']]) {
      expect(mayPublish(roles, 'meshhub/billing/alice', rules)).toBe(false);
      expect(mayPublish(roles, 'meshhub/audit/alerts', rules)).toBe(false);
    }
    expect(rules.isAdminOnly('meshhub/billing/alice')).toBe(true);
    expect(rules.isAdminOnly('meshhub/audit/alerts')).toBe(true);
    expect(rules.isAdminOnly('meshhub/readings/!01020304')).toBe(false);
    expect(maySubscribe(['integration'], 'meshhub/billing/alice', rules)).toBe(true);
    expect(maySubscribe(['integration'], 'meshhub/audit/alerts', rules)).toBe(false);
    expect(maySubscribe(['integration'], 'meshhub/audit/#', rules)).toBe(false);
    expect(maySubscribe(['integration'], 'meshhub/#', rules)).toBe(true);
    expect(maySubscribe(['admin'], 'meshhub/audit/#', rules)).toBe(true);
  });

  it('refuses what is not a topic filter', () => {
    expect(() => registry.declare('x', 'meshhub/#/more', { readers: 'admin' })).toThrow(
      /not an MQTT topic filter/,
    );
    expect(() => registry.declare('x', '$SYS/#', { readers: 'admin' })).toThrow(/not an MQTT topic filter/);
  });
});

describe('haSafeId', () => {
  it('keeps mesh ids short and makes other ids safe and distinct', () => {
    expect(haSafeId('!a1b2c3d4')).toBe('a1b2c3d4');
    expect(haSafeId('plain-id_1')).toBe('plain-id_1');
    expect(haSafeId('a.b')).toMatch(/^a_b_[0-9a-f]{6}$/);
    expect(haSafeId('a.b')).not.toBe(haSafeId('a:b'));
  });
});

describe('MqttAuthenticator defaults', () => {
  it('refuses everyone when nothing is injected', async () => {
    const auth = new MqttAuthenticator();
    await expect(auth.authenticate(undefined, undefined)).rejects.toMatchObject({
      reason: 'anonymous_not_allowed',
      returnCode: 5,
    });
    await expect(auth.authenticate('u', Buffer.from('p'))).rejects.toMatchObject({
      reason: 'bad_credentials',
      returnCode: 4,
    });
    await expect(auth.authenticate('u', Buffer.from('eyJhbGciOiJFUzI1NiJ9.e30.c2ln'))).rejects.toMatchObject({
      reason: 'bad_token',
      returnCode: 4,
    });
  });

  it('answers 3 (server unavailable) when the user store fails, not "bad password"', async () => {
    const auth = new MqttAuthenticator({
      checkPassword: async () => {
        throw new Error('database is locked');
      },
    });
    const failure = await auth.authenticate('u', Buffer.from('p')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(MqttAuthFailure);
    expect(failure).toMatchObject({ reason: 'unavailable', returnCode: 3 });
  });

  it('makes anonymous clients devices when allowed', async () => {
    expect(await new MqttAuthenticator({ allowAnonymous: true }).authenticate(undefined, undefined)).toEqual({
      username: '(anonymous)',
      roles: ['device'],
      via: 'anonymous',
    });
  });
});

describe('MqttPacketSizeGuard', () => {
  /** A PUBLISH-like packet: type byte, remaining length varint, body. */
  function packet(bodyLength: number): Uint8Array {
    const length: number[] = [];
    let n = bodyLength;
    do {
      let byte = n % 128;
      n = Math.floor(n / 128);
      if (n > 0) byte |= 0x80;
      length.push(byte);
    } while (n > 0);
    return Uint8Array.from([0x30, ...length, ...new Array(bodyLength).fill(7)]);
  }

  it('property: trips exactly when some packet is over the limit, however the stream is split', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 20 }),
        (sizes, cuts) => {
          const limit = 300;
          const stream = Buffer.concat(sizes.map(packet));
          let tripped = 0;
          const guard = new MqttPacketSizeGuard(limit, () => tripped++);
          let at = 0;
          for (let i = 0; at < stream.length; i++) {
            const size = cuts[i % cuts.length]!;
            guard.feed(stream.subarray(at, at + size));
            at += size;
          }
          expect(tripped).toBe(sizes.some((s) => s > limit) ? 1 : 0);
        },
      ),
    );
  });
});
