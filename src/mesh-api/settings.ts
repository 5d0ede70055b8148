/**
 * Settings of the mesh API (src/mesh-api): the hub's radio re-exposed to the official
 * Meshtastic apps over the stream protocol on TCP (issue 16, part 1).
 */
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { duration, flag, int, parsedBy, port, splitList } from '../config/fields.js';

/** The addresses allowed to connect: `127.0.0.1, 192.168.1.0/24, fd00::/8`; empty allows any. */
export interface ClientAllowlist {
  readonly entries: readonly string[];
  allows(address: string): boolean;
}

/** `MESH_API_ALLOW`: comma-separated IP addresses and CIDR ranges (IPv4 or IPv6). */
export function parseClientAllowlist(value: string): ClientAllowlist | string {
  const entries = splitList(value);
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const prefix = bits === undefined ? undefined : Number(bits);
    const maxBits = family === 6 ? 128 : 32;
    if (
      family === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d{1,3}$/.test(bits!) || prefix > maxBits))
    ) {
      return `"${entry}" is not an IP address or CIDR range (e.g. 192.168.1.0/24)`;
    }
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, prefix, type);
  }
  return {
    entries,
    allows(address) {
      if (entries.length === 0) return true;
      // A dual-stack listener reports IPv4 clients as ::ffff:a.b.c.d.
      const plain =
        address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
      const family = isIP(plain);
      if (family === 0) return false;
      return list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

export const meshApiSettings = z.object({
  /** Serve the Meshtastic TCP API (the official apps and the `meshtastic` CLI connect to the hub). */
  MESH_API: flag.prefault('true'),
  /** Loopback unless the operator says otherwise: apps on the LAN need `0.0.0.0` (or an address). */
  MESH_API_HOST: z.string().min(1).default('127.0.0.1'),
  MESH_API_PORT: port.default(4403),
  /** Let clients change the radio (set_config, set_channel, set_owner, reboot, factory reset, …). */
  MESH_API_ADMIN: flag.prefault('false'),
  /**
   * Show clients the texts the hub sends for subscribers (and the ACKs for them) and the texts
   * addressed to the hub's node; off: they are people's conversations, not the app's.
   */
  MESH_API_SHOW_HUB_TEXTS: flag.prefault('false'),
  /** Client addresses allowed to connect (IPs and CIDR ranges, comma-separated); empty: any. */
  MESH_API_ALLOW: z.string().default('').transform(parsedBy(parseClientAllowlist)),
  MESH_API_MAX_CLIENTS: int(1, 1000).default(32),
  /** Bytes a client may leave unread before it is dropped (the radio and other clients never wait). */
  MESH_API_CLIENT_BUFFER_BYTES: int(4096, 64 * 1024 * 1024).default(1024 * 1024),
  /** A client that sends nothing (not even a heartbeat) for this long is dropped, as firmware does. */
  MESH_API_IDLE_TIMEOUT: duration.prefault('15m'),
});

export type MeshApiSettings = z.output<typeof meshApiSettings>;
