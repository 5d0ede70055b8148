/**
 * Issue 17: SIGKILL during outbound sends. The built hub runs as a child process on a radio it
 * reaches over TCP (RADIO=tcp:…): the simulator, run here in the test process, so it outlives
 * every kill as a real radio outlives the hub's process. The simulator's packet responder is
 * wrapped to count every TEXT_MESSAGE_APP packet it receives, per packet id: what went out over
 * the air.
 *
 * A seeded script posts a few texts (to nodes in reach with the default hold, and to the node out
 * of range with `hold_hours: 0`, so they fail), waits a random moment while the gateway sends and
 * the acknowledgements come back, and SIGKILLs the hub; ROUNDS times. Then the hub runs until
 * nothing is in flight.
 *
 * Exact counts at the end:
 * - every text posted (202) is stored once, and ends `delivered` or `failed`, or rests where
 *   docs/architecture.md "Meshtastic facts" and docs/held-texts.md let it rest: `sent` (our radio heard a relay repeat it and
 *   the destination's ACK died with a killed hub; nothing retransmits after an implicit ACK) or
 *   `queued` and waiting for its node (held);
 * - over the radio: no packet id twice, every packet the radio received is an attempt the hub
 *   recorded before sending (message_packets), no text more often than its recorded attempts,
 *   and every delivered text was received at least once.
 */
import { join } from 'node:path';
import { Portnums } from '@meshtastic/protobufs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMessagingResponder, messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import type { PacketResponder } from '../../src/mesh/simulator/responder.js';
import { waitFor } from '../helpers/hub.js';
import { testSimulator } from '../helpers/simulator.js';
import { call } from '../messaging/helpers.js';
import {
  type HubProcess,
  killScenario,
  pause,
  removeDir,
  scratchDir,
  startSendingHub,
  waitForNodes,
} from './helpers/hub-process.js';

const { seed: SEED, rounds: ROUNDS, between } = killScenario('kill during outbound sends');

/** What the radio received: text packets per packet id, and the text of each. */
const onAir = new Map<number, { count: number; text: string; to: number }>();
const inner = createMessagingResponder({ failurePercent: 10, delayScale: 0.1 });
const countingResponder: PacketResponder = {
  onPacket(packet, client) {
    const data = packet.payloadVariant.case === 'decoded' ? packet.payloadVariant.value : undefined;
    if (data?.portnum === Portnums.PortNum.TEXT_MESSAGE_APP) {
      const seen = onAir.get(packet.id);
      if (seen) seen.count++;
      else onAir.set(packet.id, { count: 1, text: new TextDecoder().decode(data.payload), to: packet.to });
    }
    return inner.onPacket(packet, client);
  },
};

const sim = testSimulator({
  seed: 7,
  telemetryIntervalMs: 3_600_000,
  responder: countingResponder,
});

const dataDir = scratchDir('sends');
let hub: HubProcess;
let token: string;

beforeAll(async () => {
  const { port } = await sim.start();
  ({ hub, token } = await startSendingHub(dataDir, port));
});

afterAll(async () => {
  await hub?.kill();
  await sim.stop();
  removeDir(dataDir);
});

describe('SIGKILL during outbound sends (the built hub as a child process, the radio outliving it)', () => {
  it(`ends every text once, never sends a packet twice or unrecorded (seed ${SEED}, ${ROUNDS} kills)`, async () => {
    const network = sim.network!;
    const { outOfRange } = messagingRoles(network);
    const reachable = network.nodes.filter((n) => n !== outOfRange);
    // The hub knows the nodes once it has had the radio's node database.
    await waitForNodes(hub, token, network.nodes.length);

    const posted: { id: string; text: string; holdless: boolean }[] = [];
    const script: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const texts = between(1, 5);
      for (let t = 0; t < texts; t++) {
        const toOutOfRange = outOfRange !== undefined && between(0, 6) === 0;
        const target = toOutOfRange ? outOfRange : reachable[between(0, reachable.length)]!;
        const text = `r${round} t${t} to ${target.id}`;
        const r = await call(hub.baseUrl, 'POST', '/api/v1/messages', {
          token,
          body: { target_node_id: target.id, text, ...(toOutOfRange ? { hold_hours: 0 } : {}) },
        });
        expect(r.status, JSON.stringify(r.body)).toBe(202);
        posted.push({ id: r.body.id as string, text, holdless: toOutOfRange });
      }
      const killAfter = between(0, 2_500);
      await pause(killAfter);
      await hub.kill();
      script.push(`${texts}@${killAfter}ms`);
      await pause(between(0, 300));
      await hub.start();
    }

    // Let the hub finish: nothing in flight (no ACK deadline pending) and nothing due now.
    const db = () => new Database(join(dataDir, 'meshhub.sqlite'), { readonly: true, fileMustExist: true });
    const settled = () => {
      const d = db();
      try {
        return (
          d
            .prepare(
              `SELECT count(*) FROM messages WHERE direction = 'outbound'
               AND (ack_deadline IS NOT NULL OR (status = 'queued' AND held_since IS NULL))`,
            )
            .pluck()
            .get() === 0
        );
      } finally {
        d.close();
      }
    };
    await waitFor(
      () => settled() || undefined,
      120_000,
      () => `every text settled\n${hub.tail()}`,
    );

    const statuses = new Map<string, number>();
    const d = db();
    try {
      const rows = d
        .prepare(
          `SELECT m.public_id AS id, m.status, m.attempts, m.held_since, m.text,
             (SELECT count(*) FROM messages x WHERE x.public_id = m.public_id) AS copies
           FROM messages m WHERE m.direction = 'outbound'`,
        )
        .all() as {
        id: string;
        status: string;
        attempts: number;
        held_since: number | null;
        text: string;
        copies: number;
      }[];
      const byId = new Map(rows.map((r) => [r.id, r]));
      // Every text posted is stored once, and nothing else was created.
      expect(rows.length).toBe(posted.length);
      for (const p of posted) {
        const row = byId.get(p.id);
        expect(row, p.id).toBeDefined();
        expect(row!.copies).toBe(1);
        statuses.set(row!.status, (statuses.get(row!.status) ?? 0) + 1);
        // Where a text may end.
        if (row!.status === 'queued') expect(row!.held_since, `${p.text} queued but not held`).not.toBeNull();
        else expect(['delivered', 'failed', 'sent']).toContain(row!.status);
        if (p.holdless) expect(row!.status).toBe('failed');
      }

      // Over the radio: each packet once, each one a recorded attempt, no text more than its attempts.
      const packets = d
        .prepare(
          'SELECT p.packet_id AS packet, m.public_id AS id FROM message_packets p JOIN messages m ON m.id = p.message_id',
        )
        .all() as { packet: number; id: string }[];
      const recorded = new Map(packets.map((p) => [p.packet >>> 0, p.id]));
      const twice = [...onAir].filter(([, seen]) => seen.count !== 1);
      expect(twice, 'packet ids the radio received more than once').toEqual([]);
      const unrecorded = [...onAir.keys()].filter((packet) => !recorded.has(packet >>> 0));
      expect(unrecorded, 'packets on the air that no attempt recorded').toEqual([]);
      const sendsPerText = new Map<string, number>();
      for (const [packet, seen] of onAir) {
        const id = recorded.get(packet >>> 0)!;
        expect(seen.text).toBe(byId.get(id)!.text);
        sendsPerText.set(id, (sendsPerText.get(id) ?? 0) + 1);
      }
      for (const row of rows) {
        expect(sendsPerText.get(row.id) ?? 0, row.text).toBeLessThanOrEqual(row.attempts);
        if (row.status === 'delivered' || row.status === 'sent')
          expect(sendsPerText.get(row.id) ?? 0).toBeGreaterThanOrEqual(1);
      }
      const resent = [...sendsPerText.values()].filter((n) => n > 1).length;
      console.log(
        `[reliability] kill during sends: ${ROUNDS} kills (${script.join(', ')}); ${posted.length} texts: ` +
          `${[...statuses].map(([s, n]) => `${n} ${s}`).join(', ')}; ${onAir.size} packets on the air, none twice, ` +
          `all recorded; ${resent} texts sent more than once (a retry after an ACK lost with the hub)`,
      );
    } finally {
      d.close();
    }
  }, 600_000);
});
