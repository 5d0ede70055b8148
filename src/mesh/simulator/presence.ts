/**
 * People in the field walk out of range and switch their radios off overnight
 * (docs/held-texts.md). A presence schedule says, for a node and a time, whether the simulated
 * mesh hears it: while it is away it sends nothing (no telemetry, position or nodeinfo) and no
 * text reaches it (our radio reports MAX_RETRANSMIT).
 *
 * The default schedule, `comeAndGo`, is seeded and deterministic: about one node in six (never
 * the node that is always out of range) wanders. Each wanderer stays for the first 10–20 min
 * after the simulator starts, so a fresh demo or test sees every node, then is away for 30–60 min
 * and back for 20–40 min, over and over — all lengths drawn from the seed and the node.
 * With `awayMinutes` (SIM_AWAY_MINUTES, for a demo of held texts in minutes) every length is
 * that many minutes instead: there for N min, away for N, back for N, away for N, …
 */
import { hash32, unitHash } from './random.js';

const MINUTE_MS = 60_000;

export interface PresenceSchedule {
  /** False while the node is away: the mesh does not hear it, nor it the mesh. */
  isPresent(nodeNum: number, at: number): boolean;
  /** The away windows of a node that begin before `until` (ms), for logs and tests. */
  awayWindows(nodeNum: number, from: number, until: number): Array<{ from: number; until: number }>;
}

/** Every node always there. */
export const alwaysPresent: PresenceSchedule = {
  isPresent: () => true,
  awayWindows: () => [],
};

export interface AwayWindow {
  nodeNum: number;
  /** ms since the epoch, inclusive. */
  from: number;
  /** ms since the epoch, exclusive. */
  until: number;
}

/** Nodes away exactly during the given windows (tests). */
export function awayDuring(windows: readonly AwayWindow[]): PresenceSchedule {
  const of = (nodeNum: number) => windows.filter((w) => w.nodeNum >>> 0 === nodeNum >>> 0);
  return {
    isPresent: (nodeNum, at) => !of(nodeNum).some((w) => at >= w.from && at < w.until),
    awayWindows: (nodeNum, from, until) =>
      of(nodeNum)
        .filter((w) => w.until > from && w.from < until)
        .map(({ from: f, until: u }) => ({ from: f, until: u })),
  };
}

interface Wanderer {
  firstStayMs: number;
  awayMs: number;
  stayMs: number;
}

/**
 * The seeded come-and-go schedule of a network, anchored at `startedAt` (when the simulator
 * started). `excluded`: nodes that never wander (the one always out of range); `awayMinutes`:
 * the fixed length of every stay and absence (default: the seeded 10–60 min lengths).
 */
export function comeAndGo(
  network: { seed: number; nodes: readonly { num: number }[] },
  startedAt: number,
  excluded: readonly number[] = [],
  awayMinutes?: number,
): PresenceSchedule {
  const candidates = network.nodes.filter((n) => !excluded.includes(n.num));
  const count = candidates.length >= 2 ? Math.max(1, Math.round(network.nodes.length / 6)) : 0;
  const wanderers = new Map<number, Wanderer>();
  const start = hash32(network.seed, 0x77616e64) % Math.max(1, candidates.length);
  for (let i = 0; i < count; i++) {
    const node = candidates[(start + i * 5) % candidates.length]!;
    if (wanderers.has(node.num)) continue;
    const r = (k: number) => unitHash(network.seed, node.num, k);
    if (awayMinutes !== undefined && awayMinutes > 0) {
      const ms = Math.round(awayMinutes * MINUTE_MS);
      wanderers.set(node.num, { firstStayMs: ms, awayMs: ms, stayMs: ms });
      continue;
    }
    wanderers.set(node.num, {
      firstStayMs: Math.round((10 + 10 * r(1)) * MINUTE_MS),
      awayMs: Math.round((30 + 30 * r(2)) * MINUTE_MS),
      stayMs: Math.round((20 + 20 * r(3)) * MINUTE_MS),
    });
  }
  const windowsOf = (nodeNum: number, from: number, until: number) => {
    const w = wanderers.get(nodeNum >>> 0);
    if (!w) return [];
    const out: Array<{ from: number; until: number }> = [];
    const cycle = w.awayMs + w.stayMs;
    const first = startedAt + w.firstStayMs;
    const skip = Math.max(0, Math.floor((from - first) / cycle));
    for (let k = skip; ; k++) {
      const awayFrom = first + k * cycle;
      if (awayFrom >= until) break;
      if (awayFrom + w.awayMs > from) out.push({ from: awayFrom, until: awayFrom + w.awayMs });
    }
    return out;
  };
  return {
    isPresent: (nodeNum, at) => windowsOf(nodeNum, at, at + 1).length === 0,
    awayWindows: windowsOf,
  };
}
