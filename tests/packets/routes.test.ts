/**
 * `GET /api/v1/packets` over loopback HTTP on a whole hub fed by MQTT gateways: the rows a person
 * reads (gateway, duplicates, ports by name or number, hops), the filters, the cursor, CSV, a 400
 * naming the field for every bad value, the read rule and the privacy rule (contents are never
 * kept), the live tail and the metrics.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums } from '@meshtastic/protobufs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { configProblems } from '../helpers/config.js';
import { getJson, waitFor } from '../helpers/hub.js';
import { readSse } from '../helpers/sse.js';
import {
  connect,
  endClients,
  envelopeOf,
  type MqttTestHub,
  meshTopic,
  startMqttHub,
} from '../mqtt/helpers.js';

const SECRET_TEXT = 'meet me at the old mill at nine';
const GW_A = '!0000beef';
const GW_B = '!0000cafe';
let t: MqttTestHub;

function meshPacket(init: {
  from: number;
  to?: number;
  id: number;
  portnum: number;
  payload?: Uint8Array;
  hopStart?: number;
  hopLimit?: number;
  rxSnr?: number;
  replyId?: number;
}): Mesh.MeshPacket {
  return create(Mesh.MeshPacketSchema, {
    from: init.from,
    to: init.to ?? 0xffffffff,
    id: init.id,
    hopStart: init.hopStart ?? 3,
    hopLimit: init.hopLimit ?? 3,
    rxSnr: init.rxSnr ?? 0,
    payloadVariant: {
      case: 'decoded',
      value: { portnum: init.portnum, payload: init.payload ?? new Uint8Array(), replyId: init.replyId ?? 0 },
    },
  });
}

/** As a trusted gateway uplinks a packet of an unencrypted channel: decoded in the envelope. */
function plainEnvelope(packet: Mesh.MeshPacket, gateway: string): Uint8Array {
  return toBinary(
    Mqtt.ServiceEnvelopeSchema,
    create(Mqtt.ServiceEnvelopeSchema, { packet, channelId: 'LongFast', gatewayId: gateway }),
  );
}

async function publish(packet: Mesh.MeshPacket, gateway = GW_A, plain = false): Promise<void> {
  const client = await connect(t.mqttUrl);
  if (plain) {
    await client.publishAsync(meshTopic('LongFast', gateway), Buffer.from(plainEnvelope(packet, gateway)), {
      qos: 1,
    });
    return;
  }
  await client.publishAsync(
    meshTopic('LongFast', gateway),
    Buffer.from(envelopeOf(packet, { gatewayId: gateway })),
    {
      qos: 1,
    },
  );
}

async function packets(query = ''): Promise<Array<Record<string, unknown>>> {
  const { status, body } = await getJson(`${t.baseUrl}/api/v1/packets${query}`);
  expect(status).toBe(200);
  return body.data;
}

async function rowsInLog(): Promise<number> {
  return (t.hub.store.db.prepare('SELECT count(*) AS n FROM packet_log').get() as { n: number }).n;
}

beforeAll(async () => {
  t = await startMqttHub({ MQTT_ALLOW_ANONYMOUS: 'true', MESH_TRUSTED_GATEWAYS: GW_B });
  const text = new TextEncoder().encode(SECRET_TEXT);
  // A text heard through two gateways (the second a duplicate), a position, and a port the
  // protobufs do not name (38), each a distinct packet.
  for (const [gateway, hopLimit, rxSnr] of [
    [GW_A, 3, 6.5],
    [GW_B, 2, 0],
  ] as const) {
    const portnum = Portnums.PortNum.TEXT_MESSAGE_APP;
    await publish(
      meshPacket({ from: 0x11111111, id: 101, portnum, payload: text, hopStart: 5, hopLimit, rxSnr }),
      gateway,
    );
  }
  await publish(
    meshPacket({
      from: 0x22222222,
      to: 0x11111111,
      id: 202,
      portnum: 38,
      payload: Uint8Array.of(1, 2, 3),
      replyId: 101,
    }),
    // Encrypted with the channel key: a port the protobufs do not name still opens (newer
    // firmware's ports), since no key opens it to a known port (src/mesh/mqtt/uplink.ts).
    GW_B,
  );
  await publish(
    meshPacket({
      from: 0x33333333,
      id: 303,
      portnum: Portnums.PortNum.POSITION_APP,
      hopStart: 0,
      hopLimit: 1,
    }),
    GW_A,
  );
  await waitFor(async () => (await rowsInLog()) >= 4, 10_000, 'four rows in the packet log');
  await endClients();
});
afterAll(async () => {
  await endClients();
  await t?.stop();
});

describe('GET /api/v1/packets', () => {
  it('lists every sighting newest first, with the gateway, duplicates marked and hops worked out', async () => {
    const data = await packets();
    expect(data.map((p) => [p.packet_id, p.gateway, p.duplicate])).toEqual([
      [303, GW_A, false],
      [202, GW_B, false],
      [101, GW_B, true],
      [101, GW_A, false],
    ]);
    expect(data[3]).toMatchObject({
      from: '!11111111',
      to: '!ffffffff',
      port: 'TEXT_MESSAGE_APP',
      portnum: 1,
      hops_taken: 2,
      hops_left: 3,
      hop_start: 5,
      snr: 6.5,
      via: 'mqtt',
      payload_bytes: SECRET_TEXT.length,
    });
    expect(typeof data[3]!.time).toBe('string');
    // A port the protobufs do not know is answered by its number; hops unknown without hop_start.
    expect(data[1]).toMatchObject({
      port: '38',
      portnum: 38,
      to: '!11111111',
      reply_id: 101,
      payload_bytes: 3,
    });
    expect(data[0]).not.toHaveProperty('hops_taken');
  });

  it('never keeps what a packet said: the text is nowhere in the log, JSON or CSV', async () => {
    const rows = t.hub.store.db.prepare('SELECT * FROM packet_log').all();
    expect(JSON.stringify(rows)).not.toContain('old mill');
    const csv = await (await fetch(`${t.baseUrl}/api/v1/packets?format=csv`)).text();
    expect(csv).not.toContain('old mill');
    expect(JSON.stringify(await packets())).not.toContain('old mill');
  });

  it('is read by the same rule as /api/v1/nodes: no sign-in on the hub', async () => {
    expect((await fetch(`${t.baseUrl}/api/v1/nodes`)).status).toBe(200);
    expect((await fetch(`${t.baseUrl}/api/v1/packets`)).status).toBe(200);
  });

  it('filters by node, sender, addressee, port (name or number), path, gateway, duplicates and time', async () => {
    const ids = async (q: string) => (await packets(q)).map((p) => p.packet_id);
    expect(await ids('?from=!11111111')).toEqual([101, 101]);
    expect(await ids('?to=!11111111')).toEqual([202]);
    expect(await ids('?node=!11111111')).toEqual([202, 101, 101]);
    expect(await ids('?node=!11111111&duplicate=false')).toEqual([202, 101]);
    expect(await ids('?port=text_message_app')).toEqual([101, 101]);
    expect(await ids('?port=38')).toEqual([202]);
    expect(await ids('?port=3')).toEqual([303]);
    expect(await ids('?gateway=!0000cafe')).toEqual([202, 101]);
    expect(await ids('?duplicate=true')).toEqual([101]);
    expect(await ids('?via=radio')).toEqual([]);
    expect(await ids('?via=mqtt&from=!33333333')).toEqual([303]);
    expect(await ids('?since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00%2B02:00')).toHaveLength(4);
    expect(await ids('?until=2000-01-01T00:00:00Z')).toEqual([]);
    expect(await ids('?since=2999-01-01T00:00:00Z')).toEqual([]);
  });

  it('pages with the shared cursor in a Link header, repeating the filters, until the last page', async () => {
    const seen: unknown[] = [];
    let url: string | undefined = `${t.baseUrl}/api/v1/packets?limit=1&via=mqtt`;
    let pages = 0;
    while (url) {
      const res = await getJson(url);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((p: { id: number }) => p.id));
      pages++;
      const link = res.headers.get('link');
      url = link ? `${t.baseUrl}${/^<([^>]+)>; rel="next"$/.exec(link)![1]}` : undefined;
      if (url) expect(url).toContain('via=mqtt');
    }
    const all = (await packets()).map((p) => p.id);
    expect(seen).toEqual(all);
    expect(pages).toBe(4);
  });

  it('answers CSV with Accept: text/csv or ?format=csv, one line a row, the JSON names as columns', async () => {
    for (const init of [{ headers: { accept: 'text/csv' } }, {}]) {
      const url = `${t.baseUrl}/api/v1/packets${'headers' in init ? '' : '?format=csv'}`;
      const res = await fetch(url, init);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
      const lines = (await res.text()).trimEnd().split('\r\n');
      expect(lines).toHaveLength(5);
      const header = lines[0]!.split(',');
      expect(header.slice(0, 7)).toEqual(['id', 'time', 'from', 'to', 'packet_id', 'port', 'portnum']);
      const first = Object.fromEntries(header.map((h, i) => [h, lines[4]!.split(',')[i]]));
      expect(first).toMatchObject({
        from: '!11111111',
        port: 'TEXT_MESSAGE_APP',
        gateway: GW_A,
        duplicate: 'false',
      });
    }
    // format=json wins over the Accept header.
    const res = await fetch(`${t.baseUrl}/api/v1/packets?format=json`, { headers: { accept: 'text/csv' } });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it.each([
    ['from', 'from=a1b2c3d4'],
    ['to', 'to=!zzzzzzzz'],
    ['node', 'node=!123'],
    ['port', 'port=NO_SUCH_APP'],
    ['port', 'port=9999'],
    ['port', 'port=TEXT%20MESSAGE'],
    ['via', 'via=lora'],
    ['gateway', 'gateway=%20'],
    ['duplicate', 'duplicate=maybe'],
    ['since', 'since=yesterday'],
    ['until', 'until=2026-13-01T00:00:00Z'],
    ['until', 'since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z'],
    ['limit', 'limit=0'],
    ['limit', 'limit=10001'],
    ['limit', 'limit=ten'],
    ['cursor', 'cursor=not-ours'],
    ['format', 'format=xml'],
  ])('answers 400 problem details naming %s for %s, and changes nothing', async (field, query) => {
    const before = await rowsInLog();
    const res = await fetch(`${t.baseUrl}/api/v1/packets?${query}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { errors: Array<{ field: string; message: string }> };
    expect(body.errors.map((e) => e.field)).toContain(field);
    expect(JSON.stringify(body)).not.toMatch(/\bat .*\.ts:\d+/);
    expect(await rowsInLog()).toBe(before);
  });

  it('streams each new row live on /api/v1/packets/stream', async () => {
    const res = await fetch(`${t.baseUrl}/api/v1/packets/stream`);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reading = readSse(res.body!, (events) => events.some((e) => e.event === 'packet'));
    await waitFor(() => t.hub.actor('packet-log') !== undefined);
    // The stream is open once its first bytes (the retry line) arrived; publish after a moment.
    await new Promise((r) => setTimeout(r, 100));
    await publish(meshPacket({ from: 0x44444444, id: 404, portnum: Portnums.PortNum.NODEINFO_APP }));
    const { events } = await reading;
    const packet = JSON.parse(events.find((e) => e.event === 'packet')!.data);
    expect(packet).toMatchObject({ from: '!44444444', packet_id: 404, port: 'NODEINFO_APP', gateway: GW_A });
  });

  it('counts the rows it writes on /metrics', async () => {
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('meshhub_packet_log_rows_written_total '));
    expect(Number(line?.split(' ')[1])).toBe(await rowsInLog());
    expect(text).toContain('meshhub_packet_log_rows_trimmed_total');
  });
});

describe('PACKET_LOG=false', () => {
  it('writes nothing and answers an empty list', async () => {
    const off = await startMqttHub({ MQTT_ALLOW_ANONYMOUS: 'true', PACKET_LOG: 'false' });
    try {
      const client = await connect(off.mqttUrl);
      const packet = meshPacket({ from: 0x55555555, id: 505, portnum: Portnums.PortNum.TEXT_MESSAGE_APP });
      // The PUBACK comes once the packet went through the hub (its node is known).
      await client.publishAsync(meshTopic(), Buffer.from(envelopeOf(packet)), { qos: 1 });
      await waitFor(async () => (await getJson(`${off.baseUrl}/api/v1/nodes`)).body.data.length > 0);
      const res = await getJson(`${off.baseUrl}/api/v1/packets`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [] });
      // No writer runs at all (so nothing arrives later either).
      expect(off.hub.actor('packet-log')).toBeUndefined();
    } finally {
      await endClients();
      await off.stop();
    }
  });
});

describe('packet log settings', () => {
  it('refuses a bad value at start-up, naming the setting', () => {
    expect(configProblems(() => loadConfig({ PACKET_LOG: 'maybe' })).join('\n')).toMatch(
      /PACKET_LOG\b.*true or false/,
    );
    expect(configProblems(() => loadConfig({ PACKET_LOG_MAX_ROWS: '10' })).join('\n')).toMatch(
      /PACKET_LOG_MAX_ROWS.*100/,
    );
    expect(configProblems(() => loadConfig({ PACKET_LOG_DAYS: '0' })).join('\n')).toMatch(
      /PACKET_LOG_DAYS.*1 to 365/,
    );
  });

  it('is on by default with 100000 rows and 7 days', () => {
    expect(loadConfig({})).toMatchObject({
      PACKET_LOG: true,
      PACKET_LOG_MAX_ROWS: 100_000,
      PACKET_LOG_DAYS: 7,
    });
  });
});
