/**
 * Applies the upstream's downlink commands at the site, each exactly once (docs/sync.md "Pull").
 *
 * A command and its `sync_downlink_applied` row are written in ONE SQLite transaction, so a
 * crash keeps both or neither; a command whose id is recorded already is answered again without
 * doing anything (its ack was lost): `duplicate` for one that was applied, the same `rejected`
 * and reason for one that was refused. A refused command is recorded too, so the upstream's
 * resend is refused again and never half-applied.
 *
 * - `text`: stored as a queued outbound message under the upstream's `message_id`, owner
 *   `upstream:<owner>`; the gateway sends it like any other once `message.updated` is emitted
 *   (after commit, by the caller). Refused when the node is the hub's own radio or the broadcast
 *   address, the text does not fit one packet (the messaging API's rules), the owner is too long
 *   to travel back up, or the message id is taken.
 * - `subscription`: upserted as the site subscription with `source = 'upstream'` and
 *   `reference = upstream_id`, subscriber `upstream:<subscriber>`.
 * - `user`: `disabled: true` revokes every subscription of `upstream:<principal>`.
 *
 * Message time: the message is stored at the upstream's `created_at`, or at the site's now when
 * that lies ahead of it (a site clock behind the upstream's would otherwise hold the text back,
 * because a queued message is not sent before its time).
 */
import { z } from 'zod';
import { type Atomically, transactionOn } from '../../src/messaging/atomically.js';
import type { MessageChange } from '../../src/messaging/message.js';
import { MessageRepository } from '../../src/messaging/message-repository.js';
import {
  InvalidSubscriptionError,
  SubscriptionRepository,
} from '../../src/messaging/subscription-repository.js';
import { BROADCAST_NODE_ID, messageTextSchema } from '../../src/messaging/validation.js';
import type { Database, Statement } from '../../src/store/database.js';
import {
  COMMAND_KINDS,
  type CommandAck,
  type CommandBody,
  type CommandKind,
  downlinkCommandSchema,
  UPSTREAM_PRINCIPAL_PREFIX,
} from '../protocol.js';

/** The site's source name for subscriptions that came down from the upstream. */
export const UPSTREAM_SUBSCRIPTION_SOURCE = 'upstream';
/** How long an owner may be at the site: the message record travels back up with it (protocol.ts, 256). */
const MAX_OWNER_LENGTH = 256;
const MAX_REASON_LENGTH = 1000;

/** Enough of a frame to answer it: a command with an id. */
const commandEnvelope = z.object({
  type: z.literal('command'),
  id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  kind: z.unknown(),
});

export interface AppliedCommand {
  /** The answer for the upstream. */
  ack: CommandAck;
  /** The command's kind, or `unknown` (for metrics and logs). */
  kind: string;
  /** What to emit on the bus now that the transaction committed. */
  changes: MessageChange[];
}

export interface DownlinkApplierDeps {
  db: Database;
  /** The hub radio's own node id (`!xxxxxxxx`), when known: from the retained `radio.status`. */
  hubNodeId: () => string | null;
  now?: () => number;
}

type Outcome = { result: 'applied'; changes: MessageChange[] } | { result: 'rejected'; reason: string };

interface AppliedRow {
  result: 'applied' | 'rejected';
  reason: string | null;
}

export class DownlinkApplier {
  private readonly atomically: Atomically;
  private readonly messages: MessageRepository;
  private readonly subscriptions: SubscriptionRepository;
  private readonly findApplied: Statement<[number], AppliedRow>;
  private readonly recordApplied: Statement<[number, string, string, string | null, number]>;
  private readonly now: () => number;

  constructor(private readonly deps: DownlinkApplierDeps) {
    this.atomically = transactionOn(deps.db);
    this.messages = new MessageRepository(deps.db);
    this.subscriptions = new SubscriptionRepository(deps.db);
    this.findApplied = deps.db.prepare('SELECT result, reason FROM sync_downlink_applied WHERE id = ?');
    this.recordApplied = deps.db.prepare(
      'INSERT INTO sync_downlink_applied (id, kind, result, reason, applied_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.now = deps.now ?? Date.now;
  }

  /**
   * Applies one decoded downlink frame. Undefined when it is not a command with an id (nothing
   * to answer: the caller ignores and counts it). Throws only on a storage failure, in which case
   * nothing was recorded and the upstream will send the command again.
   */
  apply(frame: unknown): AppliedCommand | undefined {
    const envelope = commandEnvelope.safeParse(frame);
    if (!envelope.success) return undefined;
    const { id } = envelope.data;
    const kind = knownKind(envelope.data.kind) ?? 'unknown';
    const outcome = this.atomically((): Outcome | AppliedRow => {
      const before = this.findApplied.get(id);
      if (before) return before;
      const parsed = downlinkCommandSchema.safeParse(frame);
      const done: Outcome = parsed.success
        ? this.applyCommand(parsed.data.kind, parsed.data.body)
        : rejected(`invalid command: ${issuesText(parsed.error)}`);
      this.recordApplied.run(
        id,
        kind,
        done.result,
        done.result === 'rejected' ? done.reason : null,
        this.now(),
      );
      return done;
    });
    if ('changes' in outcome)
      return { kind, ack: { type: 'ack', id, result: 'applied' }, changes: outcome.changes };
    if (outcome.result === 'applied')
      return { kind, ack: { type: 'ack', id, result: 'duplicate' }, changes: [] };
    return {
      kind,
      ack: { type: 'ack', id, result: 'rejected', reason: outcome.reason ?? 'rejected' },
      changes: [],
    };
  }

  private applyCommand(kind: CommandKind, body: CommandBody<CommandKind>): Outcome {
    switch (kind) {
      case 'text':
        return this.applyText(body as CommandBody<'text'>);
      case 'subscription':
        return this.applySubscription(body as CommandBody<'subscription'>);
      case 'user':
        return this.applyUser(body as CommandBody<'user'>);
    }
  }

  private applyText(body: CommandBody<'text'>): Outcome {
    const owner = `${UPSTREAM_PRINCIPAL_PREFIX}${body.owner}`;
    const hubNodeId = this.deps.hubNodeId();
    if (body.node_id === hubNodeId) return rejected(`${body.node_id} is this site's own radio`);
    if (body.node_id === BROADCAST_NODE_ID) {
      return rejected(`${body.node_id} is the broadcast address; a message goes to one node`);
    }
    if (owner.length > MAX_OWNER_LENGTH) {
      return rejected(
        `owner is longer than ${MAX_OWNER_LENGTH - UPSTREAM_PRINCIPAL_PREFIX.length} characters`,
      );
    }
    const text = messageTextSchema.safeParse(body.text);
    if (!text.success) return rejected(`text ${text.error.issues.map((i) => i.message).join('; ')}`);
    if (this.messages.get(body.message_id)) {
      return rejected(`message ${body.message_id} already exists at this site`);
    }
    const at = Math.min(body.created_at, this.now());
    const message = this.messages.createOutbound({
      publicId: body.message_id,
      owner,
      ownerName: body.owner_name,
      nodeId: body.node_id,
      senderNodeId: hubNodeId,
      text: body.text,
      at,
      // The subscriber's hold; the gateway cuts it to this hub's MESSAGE_HOLD_HOURS. Absent: the
      // gateway gives the hub's default.
      ...(body.hold_hours === undefined ? {} : { holdUntil: at + Math.round(body.hold_hours * 3_600_000) }),
    });
    return { result: 'applied', changes: [{ message, kind: 'created' }] };
  }

  private applySubscription(body: CommandBody<'subscription'>): Outcome {
    try {
      this.subscriptions.upsertByReference(UPSTREAM_SUBSCRIPTION_SOURCE, body.upstream_id, {
        subscriber: `${UPSTREAM_PRINCIPAL_PREFIX}${body.subscriber}`,
        nodes: body.all_nodes ? 'all' : body.node_ids,
        status: body.status,
        expiresAt: body.expires_at,
        at: this.now(),
      });
    } catch (error) {
      if (error instanceof InvalidSubscriptionError) return rejected(error.message);
      throw error;
    }
    return { result: 'applied', changes: [] };
  }

  private applyUser(body: CommandBody<'user'>): Outcome {
    if (body.disabled)
      this.subscriptions.revokeAll(`${UPSTREAM_PRINCIPAL_PREFIX}${body.principal}`, this.now());
    return { result: 'applied', changes: [] };
  }
}

function knownKind(kind: unknown): CommandKind | undefined {
  return typeof kind === 'string' && (COMMAND_KINDS as string[]).includes(kind)
    ? (kind as CommandKind)
    : undefined;
}

function rejected(reason: string): Outcome {
  return { result: 'rejected', reason: clip(reason) };
}

function issuesText(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(frame)'}: ${i.message}`).join('; ');
}

function clip(reason: string): string {
  return reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH - 1)}…` : reason;
}
