/**
 * Channel keys and AES-CTR as the firmware does them (Channels.cpp getKey, CryptoEngine
 * initNonce): the short-index expansion of `AQ==`, the channel hash, the nonce layout, and
 * MESH_CHANNEL_KEYS parsing with its errors.
 */
import { createDecipheriv } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ChannelKeyError,
  channelCipher,
  channelHash,
  DEFAULT_CHANNEL_KEY,
  expandChannelKey,
  packetNonce,
} from '../../../src/mesh/mqtt/channel-crypto.js';
import { ChannelKeyring, parseChannelKeys } from '../../../src/mesh/mqtt/channel-keys.js';

const b64 = (s: string) => Buffer.from(s, 'base64');

describe('expandChannelKey', () => {
  it('AQ== is the well-known 16-byte LongFast key', () => {
    expect(Buffer.from(expandChannelKey(b64('AQ=='))!).toString('hex')).toBe(
      'd4f1bb3a20290759f0bcffabcf4e6901',
    );
    expect(Buffer.from(DEFAULT_CHANNEL_KEY).toString('base64')).toBe('1PG7OiApB1nwvP+rz05pAQ==');
  });

  it('a short index n is the default key with its last byte + (n − 1)', () => {
    expect(expandChannelKey(b64('Ag=='))![15]).toBe(0x02);
    expect(expandChannelKey(Uint8Array.of(10))![15]).toBe(0x0a);
  });

  it('AA== and an empty key mean no encryption', () => {
    expect(expandChannelKey(b64('AA=='))).toBeUndefined();
    expect(expandChannelKey(new Uint8Array(0))).toBeUndefined();
  });

  it('pads short keys to AES-128 or AES-256 with zeros and refuses longer than 32 bytes', () => {
    expect(expandChannelKey(Uint8Array.of(1, 2, 3))).toEqual(
      Uint8Array.from([1, 2, 3, ...new Array(13).fill(0)]),
    );
    expect(expandChannelKey(new Uint8Array(20).fill(5))).toHaveLength(32);
    expect(() => expandChannelKey(new Uint8Array(33))).toThrow(ChannelKeyError);
  });
});

describe('channelHash', () => {
  it('is 8 for LongFast with the default key (what LongFast packets carry in MeshPacket.channel)', () => {
    expect(channelHash('LongFast', expandChannelKey(b64('AQ==')))).toBe(8);
  });
});

describe('packetNonce and channelCipher', () => {
  it('lays the nonce out as packet id (64-bit LE), sender (32-bit LE), 4 zero bytes', () => {
    expect(packetNonce(1777428186, 0xfa8165a4).toString('hex')).toBe('da66f16900000000a46581fa00000000');
  });

  it('is AES-CTR with that nonce (checked against a plain AES-CTR decipher), and its own inverse', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 1, max: 0xffffffff }),
        fc.uint8Array({ maxLength: 240 }),
        (key, id, from, plain) => {
          const sealed = channelCipher(key, id, from, plain);
          const reference = createDecipheriv('aes-128-ctr', key, packetNonce(id, from));
          expect(Buffer.concat([reference.update(sealed), reference.final()])).toEqual(Buffer.from(plain));
          expect(Buffer.from(channelCipher(key, id, from, sealed))).toEqual(Buffer.from(plain));
        },
      ),
    );
  });

  it('uses AES-256 for a 32-byte key', () => {
    const key = new Uint8Array(32).fill(3);
    const sealed = channelCipher(key, 5, 6, Buffer.from('hello'));
    const reference = createDecipheriv('aes-256-ctr', key, packetNonce(5, 6));
    expect(Buffer.concat([reference.update(sealed), reference.final()]).toString()).toBe('hello');
  });
});

describe('MESH_CHANNEL_KEYS', () => {
  it('always has LongFast=AQ== unless LongFast is named', () => {
    const keys = parseChannelKeys('');
    expect(keys).toMatchObject([{ name: 'LongFast', hash: 8 }]);
    const custom = parseChannelKeys(`Farm=${Buffer.alloc(16, 1).toString('base64')},longfast=Ag==`);
    expect(custom).toHaveLength(2);
    expect((custom as Array<{ name: string }>).map((k) => k.name)).toEqual(['longfast', 'Farm']);
  });

  it.each([
    ['Farm', /expected Name=base64key pairs/],
    ['Farm=***', /not base64/],
    ['Farm=AAAA', /has 3 bytes; a Meshtastic channel key has 0, 1, 16 or 32/],
    ['Fa rm=AQ==', /expected Name=base64key pairs/],
  ])('refuses %j with a clear message', (value, message) => {
    expect(parseChannelKeys(value)).toMatch(message);
  });

  it('the keyring tries the named channel first, then keys whose hash matches', () => {
    const ring = ChannelKeyring.fromConfig(`Farm=${Buffer.alloc(16, 1).toString('base64')}`);
    expect(ring.candidates('farm', 0).map((k) => k.name)).toEqual(['Farm']);
    expect(ring.candidates('Unknown', 8).map((k) => k.name)).toEqual(['LongFast']);
    expect(ring.candidates('Unknown', 200)).toEqual([]);
  });
});
