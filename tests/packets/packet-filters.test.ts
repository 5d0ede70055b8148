/**
 * The packet page's filters: the query the page asks with, and the same filters applied to a row
 * that streamed in, so the live table never shows a row the list would not have answered.
 */
import { describe, expect, it } from 'vitest';
import {
  filterQuery,
  hopsWords,
  matchesFilters,
  NO_FILTERS,
  type PacketJson,
} from '../../src/web/src/packets/packet-filters.js';

const packet: PacketJson = {
  id: 7,
  time: '2026-11-28T10:00:00.000Z',
  from: '!a1b2c3d4',
  to: '!ffffffff',
  packet_id: 99,
  port: 'TEXT_MESSAGE_APP',
  portnum: 1,
  channel: 8,
  hops_taken: 2,
  hops_left: 1,
  hop_start: 3,
  via: 'mqtt',
  gateway: '!0000beef',
  payload_bytes: 12,
  duplicate: false,
  want_ack: false,
  want_response: false,
  request_id: 0,
  reply_id: 0,
  via_mqtt: false,
};

describe('packet page filters', () => {
  it('asks only for the filters set, node ids in lower case', () => {
    expect(filterQuery(NO_FILTERS).toString()).toBe('');
    expect(
      filterQuery({ ...NO_FILTERS, node: ' !A1B2C3D4 ', via: 'radio', duplicate: 'false' }).toString(),
    ).toBe('node=%21a1b2c3d4&via=radio&duplicate=false');
  });

  it('lets a live row through exactly when the list would answer it', () => {
    expect(matchesFilters(packet, NO_FILTERS)).toBe(true);
    expect(matchesFilters(packet, { ...NO_FILTERS, node: '!A1B2C3D4' })).toBe(true);
    expect(matchesFilters(packet, { ...NO_FILTERS, node: '!ffffffff' })).toBe(true);
    expect(matchesFilters(packet, { ...NO_FILTERS, node: '!00000001' })).toBe(false);
    expect(matchesFilters(packet, { ...NO_FILTERS, port: 'text_message_app' })).toBe(true);
    expect(matchesFilters(packet, { ...NO_FILTERS, port: '1' })).toBe(true);
    expect(matchesFilters(packet, { ...NO_FILTERS, port: '3' })).toBe(false);
    expect(matchesFilters(packet, { ...NO_FILTERS, via: 'radio' })).toBe(false);
    expect(matchesFilters(packet, { ...NO_FILTERS, gateway: '!0000BEEF' })).toBe(true);
    expect(matchesFilters(packet, { ...NO_FILTERS, gateway: '!0000cafe' })).toBe(false);
    expect(matchesFilters(packet, { ...NO_FILTERS, duplicate: 'true' })).toBe(false);
  });

  it('says hops as taken of the start, or the hops left when the start is unknown', () => {
    expect(hopsWords(packet)).toBe('2 of 3');
    const { hops_taken: _t, hop_start: _s, ...unknown } = packet;
    expect(hopsWords(unknown)).toBe('1 left');
  });
});
