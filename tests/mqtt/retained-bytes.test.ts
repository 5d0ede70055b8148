/**
 * Retained payloads live as long as the hub, so each one owns exactly its bytes: a pooled
 * `Buffer.from` slice or a view of a socket's read buffer would keep a whole chunk alive for every
 * few small retained messages alive (issue 26).
 */
import { describe, expect, it } from 'vitest';
import { retainedBytes } from '../../src/mqtt/broker.js';

describe('retainedBytes', () => {
  it('copies a small JSON payload into a buffer of its own, not a slice of the shared pool', () => {
    const json = JSON.stringify({ node_id: '!0a0b0c0d', temperature: 21.5, note: 'é' });
    const bytes = retainedBytes(json);
    expect(bytes.toString('utf8')).toBe(json);
    expect(bytes.length).toBe(Buffer.byteLength(json));
    expect(bytes.buffer.byteLength).toBe(bytes.length);
    expect(bytes.byteOffset).toBe(0);
  });

  it('copies a parsed payload out of the larger read buffer it is a view of', () => {
    const chunk = Buffer.alloc(65_536, 0x20);
    chunk.write('{"on":true}', 1_000);
    const view = chunk.subarray(1_000, 1_011);
    const bytes = retainedBytes(view);
    expect(bytes.toString()).toBe('{"on":true}');
    expect(bytes.buffer.byteLength).toBe(11);
    chunk.fill(0);
    expect(bytes.toString()).toBe('{"on":true}');
  });

  it('keeps an empty payload empty (it deletes a retained message)', () => {
    expect(retainedBytes('').length).toBe(0);
  });
});
