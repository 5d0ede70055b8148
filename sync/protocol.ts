/**
 * The sync wire protocol between a site (a hub) and the upstream (`meshhub upstream`), in one
 * place so both ends read the same definition (docs/architecture.md "Data flows" 4–5).
 *
 * **Up: batches.** The site's outbox gives every stored record a gap-free sequence number. A
 * batch is a run of that sequence, `first_seq..last_seq`, POSTed gzip'd to
 * `POST {SYNC_API}/batches`. Every number in the run is either a record or named in `dropped`
 * (`readings` records the site dropped for its outbox disk budget; their rollups travel as
 * `rollup` records instead), so the upstream can tell a gap (refused) from a drop. The upstream
 * applies a batch in one transaction, keyed by `(site_id, first_seq, last_seq)`: a retry of a
 * batch already applied is acknowledged again without applying twice.
 *
 * Readings travel in bulk: one `readings` record holds up to MAX_READINGS_ROWS rows of what one
 * write transaction at the site added (`{ rows: [[node_id, ts, …8 metrics], …] }`), not one
 * record per reading; its rows are checked by a hand-written loop (readingRowsProblem).
 *
 * **Down: commands.** The site opens one WebSocket to `GET {SYNC_API}/downlink` (it sits
 * behind NAT) and receives commands (texts from internet subscribers, subscription and user
 * changes), each with an id. It applies each once, records the id in the same transaction,
 * and answers `{ type: "ack", id }`; unacknowledged commands are sent again on the next
 * connection. What the command caused (message statuses, replies) flows up as records.
 *
 * **Identity.** Every request carries `Authorization: Bearer <JWT>` signed with the site's own
 * Ed25519 key (the local issuer's key in DATA_DIR): see signing.ts.
 *
 * Field names are snake_case (they mirror the SQLite columns); times are ms since the epoch.
 */

import { z } from 'zod';
import { READING_NODE_ID } from '../src/ingest/reading-input.js';
import { MAX_HOLD_HOURS } from '../src/messaging/settings.js';

export const SYNC_PROTOCOL_VERSION = 1;
/** Path prefix of the sync endpoints on the upstream. */
export const SYNC_API = '/api/sync/v1';
/** The audience of site request tokens. */
export const SYNC_AUDIENCE = 'meshhub-upstream';
/** Largest gzip'd batch body the upstream accepts. */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;
/** Largest batch body once gunzip'd (a zip bomb stops here). */
export const MAX_BATCH_INFLATED_BYTES = 32 * 1024 * 1024;
/** Most records in one batch. */
export const MAX_BATCH_RECORDS = 5_000;
/** Most rows in one `readings` record. */
export const MAX_READINGS_ROWS = 1_000;
/** The largest value of a PostgreSQL INTEGER column: counts and sequence numbers stored in one. */
export const MAX_INT4 = 2_147_483_647;

/** `site_id`: what an operator types; also the distribution key of every upstream table. */
export const SITE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const siteIdSchema = z
  .string()
  .regex(SITE_ID_PATTERN, 'lower-case letters, digits and "-", at most 63, starting with a letter or digit');

/** The largest |ms| a JavaScript Date can hold: every time on the wire is one. */
const MAX_MS = 8.64e15;
const ms = z.number().int().min(-MAX_MS).max(MAX_MS);
const nodeId = z.string().regex(/^![0-9a-f]{8}$/, 'a node id: "!" and 8 lower-case hex digits');
/**
 * The node id of a reading or a rollup: what the hub's ingest accepts (READING_NODE_ID: 1–64
 * letters, digits and `! . _ : -`), so a station such as `roof-1` syncs like a mesh node.
 */
const readingNodeId = z
  .string()
  .regex(READING_NODE_ID, 'a reading node id: 1–64 letters, digits and "! . _ : -"');
const nullableNumber = z.number().finite().nullable();
const text = (max: number) => z.string().max(max);
/** A count stored in an INTEGER column upstream. */
const int4Count = z.number().int().nonnegative().max(MAX_INT4);

/**
 * A raw reading: the `readings` row (units as the column names say). The record kind sites wrote
 * before `readings` (one record per reading, the whole row after every change); the upstream
 * still applies it, a site no longer writes it.
 */
export const readingBody = z.strictObject({
  node_id: readingNodeId,
  ts: ms,
  temperature_c: nullableNumber,
  humidity_percent: nullableNumber,
  pressure_pa: nullableNumber,
  wind_speed_ms: nullableNumber,
  wind_direction: nullableNumber,
  pm25_ugm3: nullableNumber,
  pm10_ugm3: nullableNumber,
  gas_resistance_kohm: nullableNumber,
});

/**
 * One stored reading as a `readings` row: node id, ts, then the 8 metrics in this order (the
 * METRIC_COLUMNS order of src/store/rollups.ts). A metric is null unless that write ADDED it: a
 * new row carries all its values, a row the site had already carries only the fields it filled.
 */
export type ReadingRow = [
  node_id: string,
  ts: number,
  temperature_c: number | null,
  humidity_percent: number | null,
  pressure_pa: number | null,
  wind_speed_ms: number | null,
  wind_direction: number | null,
  pm25_ugm3: number | null,
  pm10_ugm3: number | null,
  gas_resistance_kohm: number | null,
];
/** Elements of a ReadingRow. */
export const READING_ROW_WIDTH = 10;

/**
 * Why `rows` is not an array of 1..MAX_READINGS_ROWS ReadingRows, with the path of the first
 * problem; undefined when it is. A hand-written loop, not a zod schema per row: a catch-up
 * carries 100,000 rows and more, and zod costs microseconds each. Exactly as strict: a tuple of
 * READING_ROW_WIDTH, a node id by READING_NODE_ID, ts an integer ms a Date can hold, each metric
 * a finite number or null.
 */
export function readingRowsProblem(
  rows: unknown,
): { path: (string | number)[]; message: string } | undefined {
  if (!Array.isArray(rows)) return { path: [], message: 'expected an array of reading rows' };
  if (rows.length === 0 || rows.length > MAX_READINGS_ROWS) {
    return { path: [], message: `expected 1 to ${MAX_READINGS_ROWS} rows, got ${rows.length}` };
  }
  // The same few node ids repeat row after row: a regex test only when the id changes.
  let lastId: unknown;
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (!Array.isArray(row) || row.length !== READING_ROW_WIDTH) {
      return { path: [i], message: `expected a row of ${READING_ROW_WIDTH} values` };
    }
    const id: unknown = row[0];
    if (id !== lastId) {
      if (typeof id !== 'string' || !READING_NODE_ID.test(id)) {
        return { path: [i, 0], message: 'a reading node id: 1–64 letters, digits and "! . _ : -"' };
      }
      lastId = id;
    }
    const ts: unknown = row[1];
    if (typeof ts !== 'number' || !Number.isInteger(ts) || ts > MAX_MS || ts < -MAX_MS) {
      return { path: [i, 1], message: 'expected an integer time in ms a Date can hold' };
    }
    for (let k = 2; k < READING_ROW_WIDTH; k++) {
      const v: unknown = row[k];
      if (v !== null && (typeof v !== 'number' || !Number.isFinite(v))) {
        return { path: [i, k], message: 'expected a finite number or null' };
      }
    }
  }
  return undefined;
}

const readingRows = z.custom<ReadingRow[]>().superRefine((rows, ctx) => {
  const problem = readingRowsProblem(rows);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

/**
 * The readings one write transaction at the site added (at most MAX_READINGS_ROWS per record;
 * a transaction that added more writes several records).
 */
export const readingsBody = z.strictObject({ rows: readingRows });

const sumCount = {
  temperature_c_sum: z.number().finite(),
  temperature_c_count: int4Count,
  humidity_percent_sum: z.number().finite(),
  humidity_percent_count: int4Count,
  pressure_pa_sum: z.number().finite(),
  pressure_pa_count: int4Count,
  wind_speed_ms_sum: z.number().finite(),
  wind_speed_ms_count: int4Count,
  pm25_ugm3_sum: z.number().finite(),
  pm25_ugm3_count: int4Count,
  pm10_ugm3_sum: z.number().finite(),
  pm10_ugm3_count: int4Count,
  gas_resistance_kohm_sum: z.number().finite(),
  gas_resistance_kohm_count: int4Count,
  wind_direction_sin_sum: z.number().finite(),
  wind_direction_cos_sum: z.number().finite(),
  wind_direction_count: int4Count,
};

/**
 * The site's whole rollup row for one bucket, sent when raw readings of that bucket were dropped
 * from the outbox: the upstream keeps the site's figures for the bucket (they cover readings it
 * never received raw).
 */
export const rollupBody = z.strictObject({
  interval: z.enum(['1h', '1d']),
  node_id: readingNodeId,
  bucket_start: ms,
  ...sumCount,
});

/** A `nodes` row: NodeInfo, position, device metrics. */
export const nodeBody = z.strictObject({
  node_num: z.number().int().min(0).max(0xffffffff),
  node_id: nodeId,
  short_name: text(64).nullable(),
  long_name: text(128).nullable(),
  hw_model: text(64).nullable(),
  latitude: nullableNumber,
  longitude: nullableNumber,
  altitude: nullableNumber,
  last_heard: ms.nullable(),
  battery_level: nullableNumber,
  snr: nullableNumber,
  updated_at: ms,
});

const NODE_KEYS = new Set(Object.keys(nodeBody.shape));
const NODE_ID = /^![0-9a-f]{8}$/;
const isMs = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v <= MAX_MS && v >= -MAX_MS;
const isText = (v: unknown, max: number) => v === null || (typeof v === 'string' && v.length <= max);
const isNullableNumber = (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v));

/**
 * True when `body` is a valid `node` body: a hand-written check, not zod (a catch-up carries a
 * node record per reading, and zod costs microseconds each), exactly as strict as nodeBody: an
 * object with exactly its keys, each as nodeBody says. A body it refuses is checked by nodeBody
 * itself, for the same refusal with zod's words.
 */
export function isNodeBody(body: unknown): body is RecordBody<'node'> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  let keys = 0;
  for (const key of Object.keys(b)) {
    if (!NODE_KEYS.has(key)) return false;
    keys++;
  }
  if (keys !== NODE_KEYS.size) return false;
  const num = b.node_num;
  return (
    typeof num === 'number' &&
    Number.isInteger(num) &&
    num >= 0 &&
    num <= 0xffffffff &&
    typeof b.node_id === 'string' &&
    NODE_ID.test(b.node_id) &&
    isText(b.short_name, 64) &&
    isText(b.long_name, 128) &&
    isText(b.hw_model, 64) &&
    isNullableNumber(b.latitude) &&
    isNullableNumber(b.longitude) &&
    isNullableNumber(b.altitude) &&
    (b.last_heard === null || isMs(b.last_heard)) &&
    isNullableNumber(b.battery_level) &&
    isNullableNumber(b.snr) &&
    isMs(b.updated_at)
  );
}

export const MESSAGE_STATUSES = ['queued', 'sent', 'delivered', 'failed', 'received', 'read'] as const;

/** A `messages` row in its current state (sent on insert and on every status change). */
export const messageBody = z.strictObject({
  /** The message's public id (UUIDv7), unique across sites. */
  id: z.string().uuid(),
  /** The principal at the site; `upstream:<principal>` for texts that came down from the upstream. */
  owner: text(256).nullable(),
  owner_name: text(256).nullable(),
  node_id: nodeId,
  direction: z.enum(['outbound', 'inbound']),
  sender_node_id: nodeId.nullable(),
  target_node_id: nodeId.nullable(),
  text: text(1000),
  status: z.enum(MESSAGE_STATUSES),
  failure_code: text(64).nullable(),
  failure_reason: text(1000).nullable(),
  created_at: ms,
  updated_at: ms,
});

/** One `message_transitions` row: a status a message went through, with its time and reason. */
export const messageTransitionBody = z.strictObject({
  message_id: z.string().uuid(),
  seq: int4Count,
  status: z.enum(MESSAGE_STATUSES),
  reason: text(1000).nullable(),
  at: ms,
});

/** A messaging subscription (`subscriptions` + its `subscription_nodes`) in its current state. */
export const subscriptionBody = z.strictObject({
  id: z.number().int().positive(),
  subscriber: text(256),
  all_nodes: z.boolean(),
  node_ids: z.array(nodeId).max(10_000),
  status: z.enum(['pending', 'active', 'revoked']),
  expires_at: ms.nullable(),
  source: text(64),
  reference: text(256).nullable(),
  created_at: ms,
  updated_at: ms,
});

/** An audit event (the audit plugin), normalised fields with names resolved, and its raw record. */
export const auditEventBody = z.strictObject({
  /** Issue 29: the Microsoft 365 tenant (AUDIT_TENANTS); absent: `default` (a single-tenant site). */
  tenant: text(64).optional(),
  source: text(128),
  source_key: text(512),
  ts: ms,
  service: text(128),
  operation: text(512),
  result: text(128),
  actor: text(512),
  target: text(2048),
  tags: z.array(text(128)).max(1000),
  raw: text(1_000_000).nullable(),
  ingested_at: ms,
});

/** An audit event's tags changed: the whole new list. */
export const auditTagsBody = z.strictObject({
  /** Issue 29: the Microsoft 365 tenant (AUDIT_TENANTS); absent: `default` (a single-tenant site). */
  tenant: text(64).optional(),
  source: text(128),
  source_key: text(512),
  tags: z.array(text(128)).max(1000),
});

/** A comment added to an audit event. */
export const auditCommentBody = z.strictObject({
  /** Issue 29: the Microsoft 365 tenant (AUDIT_TENANTS); absent: `default` (a single-tenant site). */
  tenant: text(64).optional(),
  source: text(128),
  source_key: text(512),
  comment_id: z.number().int().positive(),
  author: text(512),
  text: text(10_000),
  created_at: ms,
});

export const RECORD_BODIES = {
  readings: readingsBody,
  reading: readingBody,
  rollup: rollupBody,
  node: nodeBody,
  message: messageBody,
  message_transition: messageTransitionBody,
  subscription: subscriptionBody,
  audit_event: auditEventBody,
  audit_tags: auditTagsBody,
  audit_comment: auditCommentBody,
} as const;

export type RecordKind = keyof typeof RECORD_BODIES;
export const RECORD_KINDS = Object.keys(RECORD_BODIES) as RecordKind[];
export type RecordBody<K extends RecordKind> = z.infer<(typeof RECORD_BODIES)[K]>;

/**
 * One outbox entry on the wire. `at`: when the site stored it (the site's clock). A `readings`
 * record may stand for a run of entries, `seq..through`, all `readings` entries, their rows in
 * order (a site whose readings trickle in writes one small entry per write transaction, and
 * sends them merged up to MAX_READINGS_ROWS rows a record); `at` is then the run's last entry's.
 */
export type SyncRecord = {
  [K in RecordKind]: { seq: number; kind: K; at: number; body: RecordBody<K> } & (K extends 'readings'
    ? { through?: number }
    : { through?: never });
}[RecordKind];

/** Outbox entries a record stands for (1, or the run of a merged `readings` record). */
export function recordEntries(record: { seq: number; through?: number | undefined }): number {
  return (record.through ?? record.seq) - record.seq + 1;
}

const seqNumber = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** The record checked by zod, issue by issue: what a record the fast check refuses goes through. */
const syncRecordZod = z
  .strictObject({
    seq: seqNumber,
    kind: z.enum(RECORD_KINDS as [RecordKind, ...RecordKind[]]),
    at: ms,
    through: seqNumber.optional(),
    body: z.unknown(),
  })
  .transform((record, ctx) => {
    const parsed = RECORD_BODIES[record.kind].safeParse(record.body);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({ ...issue, path: ['body', ...issue.path] } as never);
      }
      return z.NEVER;
    }
    if (record.through !== undefined && !throughFits(record.seq, record.through, record.kind, parsed.data)) {
      ctx.addIssue({
        code: 'custom',
        path: ['through'],
        message: 'only a readings record stands for a run of entries, at least one row each',
      });
      return z.NEVER;
    }
    return { ...record, body: parsed.data } as SyncRecord;
  });

/** `through` names a run of entries, each with at least one row of the (readings) record. */
function throughFits(seq: number, through: number, kind: RecordKind, body: unknown): boolean {
  const rows = kind === 'readings' ? (body as RecordBody<'readings'>).rows.length : 0;
  return through >= seq && through - seq + 1 <= rows;
}

/**
 * The rows of `body` when it is a valid `readings` body (exactly `{ rows }`, the rows as
 * readingRowsProblem accepts them); undefined otherwise, for zod to say what is wrong.
 */
function readingsBodyRows(body: unknown): ReadingRow[] | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'rows') return undefined;
  const rows = (body as { rows: unknown }).rows;
  return readingRowsProblem(rows) === undefined ? (rows as ReadingRow[]) : undefined;
}

const RECORD_KEYS = new Set(['seq', 'kind', 'at', 'through', 'body']);
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/**
 * The record, when it is a valid `readings` or `node` record, checked by hand (a catch-up
 * carries 100,000 of them, and zod costs microseconds each): exactly what syncRecordZod
 * accepts. undefined for every other record, and for any problem: zod then checks it and says
 * what is wrong.
 */
function fastRecord(input: unknown): SyncRecord | undefined {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return undefined;
  const r = input as Record<string, unknown>;
  const kind = r.kind;
  if (kind !== 'readings' && kind !== 'node') return undefined;
  for (const key of Object.keys(r)) if (!RECORD_KEYS.has(key)) return undefined;
  const { seq, at, through } = r;
  if (!isSeq(seq) || !isMs(at) || !('body' in r)) return undefined;
  if (through !== undefined && !isSeq(through)) return undefined;
  let body: unknown;
  if (kind === 'node') {
    if (!isNodeBody(r.body)) return undefined;
    body = r.body;
  } else {
    const rows = readingsBodyRows(r.body);
    if (rows === undefined) return undefined;
    body = { rows };
  }
  if (through !== undefined && !throughFits(seq, through, kind, body)) return undefined;
  return (through === undefined ? { seq, kind, at, body } : { seq, kind, at, through, body }) as SyncRecord;
}

export const syncRecordSchema = z.unknown().transform((input, ctx): SyncRecord => {
  const fast = fastRecord(input);
  if (fast) return fast;
  const parsed = syncRecordZod.safeParse(input);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue(issue as never);
  return z.NEVER;
});

/** An inclusive run `[first, last]` of sequence numbers dropped for the disk budget. */
export const seqRange = z.tuple([seqNumber, seqNumber]);

export const batchSchema = z
  .strictObject({
    protocol: z.literal(SYNC_PROTOCOL_VERSION),
    site_id: siteIdSchema,
    first_seq: seqNumber,
    last_seq: seqNumber,
    records: z.array(syncRecordSchema).max(MAX_BATCH_RECORDS),
    dropped: z.array(seqRange).max(MAX_BATCH_RECORDS),
    /** The site's clock when the batch was built (the upstream records its own receive time too). */
    sent_at: ms,
  })
  .superRefine((batch, ctx) => {
    const problem = batchCoverageProblem(batch);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['records'] });
  });

export type Batch = z.infer<typeof batchSchema>;

/**
 * Why a batch's records and dropped runs do not cover `first_seq..last_seq` exactly once, in
 * increasing order; undefined when they do. Both ends run it: the site before sending, the
 * upstream before applying (a gap inside a batch is refused like a gap between batches).
 */
export function batchCoverageProblem(batch: {
  first_seq: number;
  last_seq: number;
  records: readonly { seq: number; through?: number | undefined }[];
  dropped: readonly (readonly [number, number])[];
}): string | undefined {
  if (batch.last_seq < batch.first_seq) return 'last_seq is before first_seq';
  const runs: [number, number][] = [
    ...batch.records.map((r) => [r.seq, r.through ?? r.seq] as [number, number]),
    ...batch.dropped.map(([a, b]) => [a, b] as [number, number]),
  ].sort((a, b) => a[0] - b[0]);
  let next = batch.first_seq;
  for (const [a, b] of runs) {
    if (b < a) return `dropped run [${a}, ${b}] is backwards`;
    if (a < next) return `sequence ${a} appears twice`;
    if (a > next) return `sequence ${next} is missing`;
    next = b + 1;
  }
  if (next !== batch.last_seq + 1) return `sequence ${next} is missing`;
  return undefined;
}

/** 200 answer to a batch: everything up to `acked_seq` is stored upstream. */
export const batchAckSchema = z.strictObject({
  site_id: siteIdSchema,
  acked_seq: z.number().int().nonnegative(),
  /** True when this batch had been applied before (a retry): acknowledged, not applied again. */
  duplicate: z.boolean(),
  /** The upstream's clock (ms), so a site can sign with a corrected time. */
  server_time: ms,
});
export type BatchAck = z.infer<typeof batchAckSchema>;

/** `GET {SYNC_API}/ping`: the online probe; also tells the site where the upstream's cursor is. */
export const pingAnswerSchema = z.strictObject({
  site_id: siteIdSchema,
  acked_seq: z.number().int().nonnegative(),
  server_time: ms,
});
export type PingAnswer = z.infer<typeof pingAnswerSchema>;

/**
 * Problem `type`s of refused batches (RFC 9457 `type` is `urn:meshhub:sync:<reason>`); 409s
 * carry `expected_seq`, the first sequence number the upstream wants next.
 */
export const SYNC_REFUSALS = [
  'gap', // first_seq is past acked_seq + 1 (409)
  'sequence_backwards', // overlaps what was applied, and is not a retry of an applied batch (409)
  'replayed_request', // the same signed request (jti) seen before (409)
  'bad_batch', // not gzip, not JSON, or not the schema (400)
  'too_large', // over MAX_BATCH_BYTES or MAX_BATCH_INFLATED_BYTES (413)
  'unknown_site', // no such registered site, or its key does not verify (401)
  'bad_token', // the token is expired, for another request, or does not sign the body (401)
  'revoked_site', // the site was revoked (403)
  'site_mismatch', // body site_id is not the token's site (403)
] as const;
export type SyncRefusal = (typeof SYNC_REFUSALS)[number];

// ---- Down: commands from the upstream to a site ----

/** A text an internet subscriber sent to a node this site's radio reaches. */
export const textCommandBody = z.strictObject({
  /** The message's public id (UUIDv7) chosen upstream; the site stores the message under it. */
  message_id: z.string().uuid(),
  /** The subscriber's principal on the upstream; the site stores `upstream:<principal>`. */
  owner: text(256),
  owner_name: text(256),
  node_id: nodeId,
  text: text(1000),
  created_at: ms,
  /**
   * The subscriber's `hold_hours` (absent: the site's default hold); the site holds the text at
   * most its own MESSAGE_HOLD_HOURS.
   */
  hold_hours: z.number().finite().min(0).max(MAX_HOLD_HOURS).optional(),
});

/** An upstream subscription (from billing or an operator) for the site to honour locally. */
export const subscriptionCommandBody = z.strictObject({
  /** The upstream's id of the subscription; stored as the site subscription's `reference`. */
  upstream_id: text(128),
  /** The principal on the upstream; the site stores `upstream:<principal>`. */
  subscriber: text(256),
  all_nodes: z.boolean(),
  node_ids: z.array(nodeId).max(10_000),
  status: z.enum(['pending', 'active', 'revoked']),
  expires_at: ms.nullable(),
});

/** An upstream user changed: disabled users lose every subscription at the site. */
export const userCommandBody = z.strictObject({
  principal: text(256),
  display_name: text(256).nullable(),
  disabled: z.boolean(),
});

export const COMMAND_BODIES = {
  text: textCommandBody,
  subscription: subscriptionCommandBody,
  user: userCommandBody,
} as const;
export type CommandKind = keyof typeof COMMAND_BODIES;
export const COMMAND_KINDS = Object.keys(COMMAND_BODIES) as CommandKind[];
export type CommandBody<K extends CommandKind> = z.infer<(typeof COMMAND_BODIES)[K]>;

export type DownlinkCommand = {
  [K in CommandKind]: { type: 'command'; id: number; kind: K; body: CommandBody<K> };
}[CommandKind];

export const downlinkCommandSchema = z
  .strictObject({
    type: z.literal('command'),
    id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    kind: z.enum(COMMAND_KINDS as [CommandKind, ...CommandKind[]]),
    body: z.unknown(),
  })
  .transform((command, ctx) => {
    const parsed = COMMAND_BODIES[command.kind].safeParse(command.body);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({ ...issue, path: ['body', ...issue.path] } as never);
      }
      return z.NEVER;
    }
    return { ...command, body: parsed.data } as DownlinkCommand;
  });

/**
 * The site's answer to a command. `applied`: done now; `duplicate`: done before (the id was
 * recorded), nothing repeated; `rejected`: the site cannot apply it (reason says why) and never
 * will, so the upstream stops resending it (a text's message is then `failed` upstream).
 */
export const commandAckSchema = z.strictObject({
  type: z.literal('ack'),
  id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  result: z.enum(['applied', 'duplicate', 'rejected']),
  reason: text(1000).optional(),
});
export type CommandAck = z.infer<typeof commandAckSchema>;

/** The upstream's first frame on the downlink: who it thinks the site is, and its clock. */
export const downlinkHelloSchema = z.strictObject({
  type: z.literal('hello'),
  site_id: siteIdSchema,
  server_time: ms,
});
export type DownlinkHello = z.infer<typeof downlinkHelloSchema>;

/** Principal prefix at a site for subscribers who live on the upstream. */
export const UPSTREAM_PRINCIPAL_PREFIX = 'upstream:';
