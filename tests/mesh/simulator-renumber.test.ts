/**
 * SIM_RENUMBER_AFTER_MINUTES counts from the first client's connection, not from the simulator's
 * start: a hub that connects late (slow to start on a loaded machine) still learns the node under
 * its old number before it moves, or it could never link the two (CI failed that way).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testSimulator } from '../helpers/simulator.js';
import { RawClient, waitFor } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('SIM_RENUMBER_AFTER_MINUTES', () => {
  it('moves the node that long after the first client connects, however late that is', async () => {
    const sim = testSimulator({ seed: 3, telemetryIntervalMs: 3_600_000, renumberAfterMs: 400 });
    await sim.start();
    cleanups.push(() => sim.stop());
    const move = sim.renumbering!;
    // Connect well after the time the move would have taken counted from the start.
    await new Promise((r) => setTimeout(r, 800));
    expect(move.done(Date.now())).toBe(false);

    const c = await RawClient.connect(sim.address!.port);
    cleanups.push(() => c.close());
    const dump = await c.handshake(21);
    const listed = dump.flatMap((m) =>
      m.payloadVariant.case === 'nodeInfo' ? [m.payloadVariant.value.num] : [],
    );
    expect(listed).toContain(move.oldNum);
    expect(listed).not.toContain(move.newNum);

    // Then it moves: its NodeInfo comes from the new number, and a second client finds only that.
    await waitFor(
      () => c.packets().some((p) => p.from === move.newNum),
      'a packet from the new number',
      10_000,
    );
    const late = await RawClient.connect(sim.address!.port);
    cleanups.push(() => late.close());
    const after = (await late.handshake(22)).flatMap((m) =>
      m.payloadVariant.case === 'nodeInfo' ? [m.payloadVariant.value.num] : [],
    );
    expect(after).toContain(move.newNum);
    expect(after).not.toContain(move.oldNum);
  }, 20_000);
});
