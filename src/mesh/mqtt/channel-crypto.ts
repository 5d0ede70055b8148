/**
 * Meshtastic channel encryption, as the firmware does it (src/mesh/Channels.cpp getKey,
 * CryptoEngine initNonce):
 *
 * - a channel's `psk` of 0 bytes means no encryption; of 1 byte is a short index: 0 = no
 *   encryption, 1 = the well-known default key, n = the default key with its last byte + (n − 1);
 *   shorter than 16 bytes is zero-padded to AES-128, 17–31 bytes to AES-256;
 * - the cipher is AES-CTR over the protobuf `Data` bytes, with the 16-byte nonce
 *   packet id (64-bit LE) ‖ sender node number (32-bit LE) ‖ 4 zero bytes (the block counter);
 * - the channel hash in `MeshPacket.channel` of an encrypted packet is the XOR of the channel
 *   name's bytes and the expanded key's bytes.
 */
import { createCipheriv } from 'node:crypto';

/** The firmware's `defaultpsk`: the key behind `AQ==` on the default LongFast channel. */
export const DEFAULT_CHANNEL_KEY: Readonly<Uint8Array> = Uint8Array.from([
  0xd4, 0xf1, 0xbb, 0x3a, 0x20, 0x29, 0x07, 0x59, 0xf0, 0xbc, 0xff, 0xab, 0xcf, 0x4e, 0x69, 0x01,
]);

export class ChannelKeyError extends Error {
  override readonly name = 'ChannelKeyError';
}

/**
 * The AES key a channel psk stands for, or undefined when the channel is not encrypted.
 * Throws ChannelKeyError for a psk longer than 32 bytes (AES-256 is the most there is).
 */
export function expandChannelKey(psk: Uint8Array): Uint8Array | undefined {
  if (psk.length === 0) return undefined;
  if (psk.length === 1) {
    const index = psk[0]!;
    if (index === 0) return undefined;
    const key = Uint8Array.from(DEFAULT_CHANNEL_KEY);
    key[15] = (key[15]! + index - 1) & 0xff;
    return key;
  }
  if (psk.length > 32) throw new ChannelKeyError(`a channel key has at most 32 bytes, got ${psk.length}`);
  const key = new Uint8Array(psk.length <= 16 ? 16 : 32);
  key.set(psk);
  return key;
}

/** `MeshPacket.channel` of a packet encrypted on this channel: XOR of name bytes and key bytes. */
export function channelHash(name: string, key: Uint8Array | undefined): number {
  let hash = 0;
  for (const byte of Buffer.from(name, 'utf8')) hash ^= byte;
  if (key) for (const byte of key) hash ^= byte;
  return hash;
}

/** packet id as 64-bit LE, sender node number as 32-bit LE, then the 32-bit block counter (0). */
export function packetNonce(packetId: number, from: number): Buffer {
  const nonce = Buffer.alloc(16);
  nonce.writeUInt32LE(packetId >>> 0, 0);
  nonce.writeUInt32LE(from >>> 0, 8);
  return nonce;
}

/**
 * AES-CTR over a packet's payload with the channel key: encrypts plain `Data` bytes and
 * decrypts `MeshPacket.encrypted` alike (CTR is its own inverse). CTR has no integrity check:
 * a wrong key yields garbage, which the caller detects by decoding it.
 */
export function channelCipher(
  key: Uint8Array,
  packetId: number,
  from: number,
  bytes: Uint8Array,
): Uint8Array {
  const algorithm = key.length === 32 ? 'aes-256-ctr' : 'aes-128-ctr';
  const cipher = createCipheriv(algorithm, key, packetNonce(packetId, from));
  const out = Buffer.concat([cipher.update(bytes), cipher.final()]);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}
