/** The rule engine alone, on its own clock: the repeat limit over time, and offline flapping. */
import { describe, expect, it } from 'vitest';
import { RuleEngine } from '../../src/notifications/engine.js';
import { ruleSpecSchema } from '../../src/notifications/schemas.js';
import type { Rule } from '../../src/notifications/store.js';

const rule = (id: number, body: Record<string, unknown>): Rule => ({
  id,
  ...ruleSpecSchema.parse({ name: `r${id}`, ...body }),
});

describe('rule engine', () => {
  it('a node that drops off and comes back every few minutes fires once per repeat limit', () => {
    let now = 1_700_000_000_000;
    const engine = new RuleEngine(() => now);
    engine.setRules([rule(1, { kind: 'node_offline', minutes: 5, repeat_minutes: 60 })]);
    const n = '!0000abcd';
    const fired: string[] = [];
    for (let i = 0; i < 40; i++) {
      for (const t of engine.onNodeUpdated({ nodeId: n, nodeNum: 0xabcd, lastHeard: now }))
        if (!t.suppressed && t.state === 'on') fired.push(t.message);
      now += 6 * 60_000; // quiet for 6 min: offline
      for (const t of engine.check()) if (!t.suppressed && t.state === 'on') fired.push(t.message);
    }
    // 40 flaps over 4 hours: once per hour.
    expect(fired).toHaveLength(4);
  });

  it('without a repeat limit every transition fires', () => {
    let now = 1_700_000_000_000;
    const engine = new RuleEngine(() => now);
    engine.setRules([rule(1, { kind: 'node_offline', minutes: 5, repeat_minutes: 0 })]);
    let on = 0;
    for (let i = 0; i < 40; i++) {
      engine.onNodeUpdated({ nodeId: '!0000abcd', nodeNum: 0xabcd, lastHeard: now });
      now += 6 * 60_000;
      on += engine.check().filter((t) => t.state === 'on' && !t.suppressed).length;
    }
    expect(on).toBe(40);
  });

  it('reports on and off for a stateful rule, and a powered node (101 %) is never low', () => {
    const engine = new RuleEngine(() => 0);
    engine.setRules([rule(1, { kind: 'battery_low', threshold: 20 })]);
    const u = (batteryLevel: number) =>
      engine.onNodeUpdated({ nodeId: '!00000001', nodeNum: 1, batteryLevel });
    expect(u(101)).toEqual([]);
    expect(u(10).map((t) => t.state)).toEqual(['on']);
    expect(u(30).map((t) => t.state)).toEqual(['off']);
  });
});
