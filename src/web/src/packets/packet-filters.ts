/**
 * The packet page's filters: as the query of `GET /api/v1/packets` (and of its CSV), and as a
 * test of one live row, so a row streamed in shows only when the list would have answered it.
 */
import type { PacketJson } from '../../../packets/schemas.js';
import { t } from '../i18n/index.js';

export type { PacketJson };

export interface PacketFilters {
  node: string;
  port: string;
  via: '' | 'radio' | 'mqtt';
  gateway: string;
  duplicate: '' | 'true' | 'false';
}

export const NO_FILTERS: PacketFilters = { node: '', port: '', via: '', gateway: '', duplicate: '' };

/** The filters set, as query parameters (blank ones left out). */
export function filterQuery(filters: PacketFilters): URLSearchParams {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    const v = value.trim();
    if (v) query.set(key, key === 'node' || key === 'gateway' ? v.toLowerCase() : v);
  }
  return query;
}

/** True when the list, asked with these filters, would answer `packet`. */
export function matchesFilters(packet: PacketJson, filters: PacketFilters): boolean {
  const node = filters.node.trim().toLowerCase();
  if (node && packet.from !== node && packet.to !== node) return false;
  const port = filters.port.trim().toUpperCase();
  if (port && packet.port.toUpperCase() !== port && String(packet.portnum) !== port) return false;
  if (filters.via && packet.via !== filters.via) return false;
  const gateway = filters.gateway.trim().toLowerCase();
  if (gateway && (packet.gateway ?? '').toLowerCase() !== gateway) return false;
  if (filters.duplicate && String(packet.duplicate) !== filters.duplicate) return false;
  return true;
}

/** Hops as people read them: `2 of 5` (taken of the start), or the hops left when the start is unknown. */
export function hopsWords(packet: PacketJson): string {
  if (packet.hops_taken !== undefined && packet.hop_start !== undefined)
    return t('mesh.packets.hopsOf', { taken: packet.hops_taken, start: packet.hop_start });
  return t('mesh.packets.hopsLeft', { left: packet.hops_left });
}
