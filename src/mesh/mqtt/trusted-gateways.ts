/**
 * `MESH_TRUSTED_GATEWAYS` (README "MQTT: mesh packets and retained messages"): the Meshtastic
 * gateways whose unencrypted uplink the hub believes, and whose texts to the hub's node may enter
 * a subscriber's conversation. Comma-separated gateway ids as in the topic's last level
 * (`!a1b2c3d4`), each optionally bound to the MQTT user that must publish it
 * (`!a1b2c3d4@farm-gw`): a bare id is trusted from any `device` login that names it, a bound one
 * only from that login. Empty (the default) trusts nobody.
 *
 * A lookup is one or two Set probes: it runs on the MQTT ingest path.
 */

import { splitList } from '../../config/fields.js';

export interface TrustedGateways {
  readonly entries: readonly string[];
  /** True when `gatewayId`, published by MQTT user `publisher`, is trusted. */
  trusts(gatewayId: string, publisher: string | undefined): boolean;
}

const ENTRY = /^(![0-9a-f]{8})(?:@([^\s,@]{1,128}))?$/;

export const NO_TRUSTED_GATEWAYS: TrustedGateways = { entries: [], trusts: () => false };

/** Parses the setting; a string is what is wrong with it. */
export function parseTrustedGateways(value: string): TrustedGateways | string {
  const entries = splitList(value);
  if (entries.length === 0) return NO_TRUSTED_GATEWAYS;
  const anyPublisher = new Set<string>();
  const bound = new Set<string>();
  for (const raw of entries) {
    // Node ids are lower-case hex in topics (`!a1b2c3d4`); the user part keeps its case.
    const at = raw.indexOf('@');
    const entry = at < 0 ? raw.toLowerCase() : `${raw.slice(0, at).toLowerCase()}${raw.slice(at)}`;
    const m = ENTRY.exec(entry);
    if (!m) return `"${raw.slice(0, 40)}" is not a gateway id like !a1b2c3d4 (or !a1b2c3d4@mqtt-user)`;
    if (m[2] === undefined) anyPublisher.add(m[1]!);
    else bound.add(entry);
  }
  const hasBound = bound.size > 0;
  return {
    entries,
    trusts(gatewayId, publisher) {
      if (anyPublisher.has(gatewayId)) return true;
      return hasBound && publisher !== undefined && bound.has(`${gatewayId}@${publisher}`);
    },
  };
}
