/**
 * The Meshtastic stream protocol (serial and TCP port 4403): each protobuf travels as
 * `0x94 0xC3 <len hi> <len lo> <len bytes>` with len ≤ 512 (firmware `MAX_TO_FROM_RADIO_SIZE`).
 * Every byte outside a frame is the device's debug log text.
 *
 * Use a fresh `StreamFramer` for every connection: a half-read frame must never leak into the
 * next one.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';

import { CONTROL_CHAR_IN_TEXT } from '../kernel/text.js';
import { PacketTooLargeError } from './errors.js';

export const FRAME_START1 = 0x94;
export const FRAME_START2 = 0xc3;
export const FRAME_HEADER_BYTES = 4;
export const MAX_FRAME_PAYLOAD = 512;
/** A debug log line longer than this is cut; the rest of it (up to its newline) is dropped. */
export const MAX_LOG_LINE_BYTES = 1024;

export type FramerEvent =
  | { kind: 'frame'; payload: Uint8Array }
  | { kind: 'log'; line: string }
  | { kind: 'corrupt'; reason: string };

/** What a phone-API client's frames say: a ToRadio, a corrupt frame, or a frame that is no ToRadio. */
export type ToRadioEvent =
  | { kind: 'message'; message: Mesh.ToRadio }
  | { kind: 'corrupt'; reason: string }
  | { kind: 'malformed' };

/**
 * The frames among `events` decoded as ToRadio, one at a time (the caller may stop between
 * them); log text is skipped, a frame that does not decode is reported, never thrown
 * (firmware: "Error: ignore malformed toradio").
 */
export function* toRadioEvents(events: Iterable<FramerEvent>): Generator<ToRadioEvent> {
  for (const event of events) {
    if (event.kind === 'corrupt') yield event;
    if (event.kind !== 'frame') continue;
    let message: Mesh.ToRadio;
    try {
      message = fromBinary(Mesh.ToRadioSchema, event.payload);
    } catch {
      yield { kind: 'malformed' };
      continue;
    }
    yield { kind: 'message', message };
  }
}

export function encodeFrame(payload: Uint8Array): Uint8Array {
  const n = payload.length;
  if (n > MAX_FRAME_PAYLOAD) throw new PacketTooLargeError(n, MAX_FRAME_PAYLOAD);
  const frame = new Uint8Array(FRAME_HEADER_BYTES + n);
  frame[0] = FRAME_START1;
  frame[1] = FRAME_START2;
  frame[2] = n >> 8;
  frame[3] = n & 0xff;
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

const NEWLINE = 0x0a;

// Outside a frame; after a 0x94; reading the two length bytes; reading the payload.
const IDLE = 0;
const AFTER_START1 = 1;
const LENGTH = 2;
const PAYLOAD = 3;
type State = typeof IDLE | typeof AFTER_START1 | typeof LENGTH | typeof PAYLOAD;

// Firmware colours its log levels with ANSI SGR sequences; other control bytes are line noise.
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping terminal escapes is the point.
const ANSI_ESCAPE = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;
const CONTROL_CHARS = new RegExp(CONTROL_CHAR_IN_TEXT.source, 'g');

export class StreamFramer {
  private state: State = IDLE;
  private lengthBytes = 0;
  private length = 0;
  private payload: Uint8Array | undefined;
  private filled = 0;
  private readonly line = new Uint8Array(MAX_LOG_LINE_BYTES);
  private lineLength = 0;
  private lineCut = false;
  private readonly decoder = new TextDecoder('utf-8');

  /** Consumes one chunk as it came off the stream; returns what it completed, in order. */
  push(chunk: Uint8Array): FramerEvent[] {
    const events: FramerEvent[] = [];
    this.consume(chunk, events);
    return events;
  }

  private consume(chunk: Uint8Array, events: FramerEvent[]): void {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      switch (this.state) {
        case IDLE: {
          const start = chunk.indexOf(FRAME_START1, i);
          const end = start === -1 ? n : start;
          if (end > i) this.appendLog(chunk, i, end, events);
          if (start === -1) return;
          i = start + 1;
          this.state = AFTER_START1;
          break;
        }
        case AFTER_START1: {
          if (chunk[i] === FRAME_START2) {
            i++;
            this.state = LENGTH;
            this.length = 0;
            this.lengthBytes = 0;
          } else {
            // A lone 0x94 is text (it is also a UTF-8 continuation byte, e.g. in "—"); the
            // current byte is looked at again from IDLE, since it may itself be a 0x94.
            this.appendLogBytes(Uint8Array.of(FRAME_START1), 0, 1);
            this.state = IDLE;
          }
          break;
        }
        case LENGTH: {
          this.length = (this.length << 8) | chunk[i]!;
          this.lengthBytes++;
          i++;
          if (this.lengthBytes === 2) this.onLength(events);
          break;
        }
        case PAYLOAD: {
          const payload = this.payload!;
          const take = Math.min(n - i, payload.length - this.filled);
          payload.set(chunk.subarray(i, i + take), this.filled);
          this.filled += take;
          i += take;
          if (this.filled === payload.length) {
            events.push({ kind: 'frame', payload });
            this.payload = undefined;
            this.state = IDLE;
          }
          break;
        }
      }
    }
  }

  private onLength(events: FramerEvent[]): void {
    const length = this.length;
    if (length > MAX_FRAME_PAYLOAD) {
      events.push({ kind: 'corrupt', reason: `frame length ${length} exceeds ${MAX_FRAME_PAYLOAD}` });
      this.state = IDLE;
      // Drop only the 0x94 and resync: the next frame may start inside the bogus length bytes.
      const lengthBytes = Uint8Array.of(length >> 8, length & 0xff);
      const next = lengthBytes.indexOf(FRAME_START1);
      if (next !== -1) this.consume(lengthBytes.subarray(next), events);
      return;
    }
    if (length === 0) {
      events.push({ kind: 'frame', payload: new Uint8Array(0) });
      this.state = IDLE;
      return;
    }
    this.payload = new Uint8Array(length);
    this.filled = 0;
    this.state = PAYLOAD;
  }

  private appendLog(chunk: Uint8Array, start: number, end: number, events: FramerEvent[]): void {
    let i = start;
    while (i < end) {
      const nl = chunk.indexOf(NEWLINE, i);
      if (nl === -1 || nl >= end) {
        this.appendLogBytes(chunk, i, end);
        return;
      }
      this.appendLogBytes(chunk, i, nl);
      this.flushLine(events);
      i = nl + 1;
    }
  }

  private appendLogBytes(chunk: Uint8Array, start: number, end: number): void {
    const take = Math.min(end - start, MAX_LOG_LINE_BYTES - this.lineLength);
    if (take > 0) {
      this.line.set(chunk.subarray(start, start + take), this.lineLength);
      this.lineLength += take;
    }
    if (take < end - start) this.lineCut = true;
  }

  private flushLine(events: FramerEvent[]): void {
    const text = this.decoder
      .decode(this.line.subarray(0, this.lineLength))
      .replace(ANSI_ESCAPE, '')
      .replace(CONTROL_CHARS, '')
      .trimEnd();
    if (text.length > 0) events.push({ kind: 'log', line: this.lineCut ? `${text}…` : text });
    this.lineLength = 0;
    this.lineCut = false;
  }
}
