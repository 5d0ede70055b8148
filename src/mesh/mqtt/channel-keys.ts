/**
 * The channel keys the hub decrypts MQTT uplink with (`MESH_CHANNEL_KEYS`), e.g.
 * `LongFast=AQ==,Farm=base64-of-16-or-32-bytes`. Keys are the base64 psk as the Meshtastic apps
 * show it. `LongFast=AQ==` (the default channel and key) is built in; naming LongFast replaces it.
 * Names match case-insensitively, as the firmware's Channels::getByName does.
 */
import { splitList } from '../../config/fields.js';
import { channelHash, expandChannelKey } from './channel-crypto.js';

export interface ChannelKey {
  /** As configured, e.g. `LongFast`. */
  name: string;
  /** The AES key; undefined for a channel without encryption (`AA==` or empty). */
  key: Uint8Array | undefined;
  /** The `MeshPacket.channel` hash of packets encrypted on this channel. */
  hash: number;
}

export const DEFAULT_CHANNEL_KEYS = 'LongFast=AQ==';

const NAME = /^[^\s=,/+#]{1,32}$/;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Parses `Name=base64,...` (on top of the built-in LongFast key); a string is the error message. */
export function parseChannelKeys(value: string): ChannelKey[] | string {
  const byName = new Map<string, ChannelKey>();
  const entries = splitList(`${DEFAULT_CHANNEL_KEYS},${value}`);
  for (const entry of entries) {
    const at = entry.indexOf('=');
    const name = at < 0 ? entry : entry.slice(0, at).trim();
    const encoded = at < 0 ? '' : entry.slice(at + 1).trim();
    if (at < 0 || !NAME.test(name)) {
      return `expected Name=base64key pairs separated by commas, e.g. LongFast=AQ==,Farm=…; got "${entry.slice(0, 40)}"`;
    }
    if (!BASE64.test(encoded)) return `the key of channel ${name} is not base64`;
    const psk = Buffer.from(encoded, 'base64');
    if (![0, 1, 16, 32].includes(psk.length)) {
      return `the key of channel ${name} has ${psk.length} bytes; a Meshtastic channel key has 0, 1, 16 or 32`;
    }
    const key = expandChannelKey(psk);
    byName.set(name.toLowerCase(), { name, key, hash: channelHash(name, key) });
  }
  return [...byName.values()];
}

/** Lookup by channel name and by channel hash, for packets whose channel name we do not know. */
export class ChannelKeyring {
  private readonly byName = new Map<string, ChannelKey>();

  constructor(readonly keys: readonly ChannelKey[]) {
    for (const k of keys) this.byName.set(k.name.toLowerCase(), k);
  }

  static fromConfig(value = ''): ChannelKeyring {
    const keys = parseChannelKeys(value);
    if (typeof keys === 'string') throw new Error(`MESH_CHANNEL_KEYS: ${keys}`);
    return new ChannelKeyring(keys);
  }

  /** Keys to try for a packet: the named channel's first, then every other key with the packet's hash. */
  candidates(channelName: string | undefined, hash: number): ChannelKey[] {
    const named = channelName === undefined ? undefined : this.byName.get(channelName.toLowerCase());
    const out = named ? [named] : [];
    for (const k of this.keys) if (k !== named && k.hash === hash) out.push(k);
    return out;
  }
}
