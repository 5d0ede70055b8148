/**
 * Refuses MQTT packets larger than a limit before they are buffered. The parser Aedes uses
 * collects a whole packet in memory, and the MQTT remaining length may announce up to 256 MB
 * ([MQTT-2.2.3]); this guard reads only the fixed headers going by ([MQTT-2.2]: one type byte,
 * then the remaining length as a 1–4 byte varint) and skips the bodies, so it costs a few
 * comparisons per packet and holds no data.
 *
 * It watches the bytes Aedes reads from the connection (a `'data'` listener beside Aedes'
 * `'readable'` one sees each chunk as `read()` hands it over, and does not change the stream's
 * flow); on an oversized header it calls `onOversize` (which destroys the connection) before
 * the parser has more than one socket chunk of that packet.
 */
import type { Duplex } from 'node:stream';

export class MqttPacketSizeGuard {
  private state: 'type' | 'length' | 'body' = 'type';
  private length = 0;
  private multiplier = 1;
  private lengthBytes = 0;
  private remaining = 0;
  private tripped = false;

  constructor(
    private readonly maxPacketBytes: number,
    private readonly onOversize: (announcedBytes: number) => void,
  ) {}

  /** Follows the packet boundaries through one chunk; false once a packet was too large. */
  feed(chunk: Uint8Array): boolean {
    if (this.tripped) return false;
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'body') {
        const take = Math.min(this.remaining, chunk.length - i);
        i += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = 'type';
        continue;
      }
      if (this.state === 'type') {
        i++;
        this.state = 'length';
        this.length = 0;
        this.multiplier = 1;
        this.lengthBytes = 0;
        continue;
      }
      const byte = chunk[i++]!;
      this.length += (byte & 0x7f) * this.multiplier;
      this.multiplier *= 128;
      this.lengthBytes++;
      if (byte & 0x80 && this.lengthBytes < 4) continue;
      // A 5th length byte would be malformed; the parser refuses it, the guard just stops counting.
      if (this.length > this.maxPacketBytes) {
        this.tripped = true;
        this.onOversize(this.length);
        return false;
      }
      this.remaining = this.length;
      this.state = this.remaining === 0 ? 'type' : 'body';
    }
    return true;
  }
}

/** Attaches a guard to a connection already handed to Aedes. */
export function guardConnection(
  conn: Duplex,
  maxPacketBytes: number,
  onOversize: (bytes: number) => void,
): void {
  const guard = new MqttPacketSizeGuard(maxPacketBytes, (bytes) => {
    onOversize(bytes);
    conn.destroy();
  });
  conn.on('data', (chunk: Buffer) => {
    guard.feed(chunk);
  });
}
