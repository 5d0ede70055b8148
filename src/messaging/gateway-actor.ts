import { randomInt } from 'node:crypto';
import { Portnums } from '@meshtastic/protobufs';
import PQueue from 'p-queue';
import type { HubBus } from '../domain/events.js';
import type { MeshRoutingReport, MeshText } from '../domain/mesh.js';
import { nodeIdFromNum, nodeNumFromId } from '../domain/node.js';
import type { RadioStatus } from '../domain/radio.js';
import { Actor } from '../kernel/actor.js';
import type { Mailbox } from '../kernel/mailbox.js';
import type { Logger } from '../log.js';
import { ANSWER_TIMEOUT_MS } from '../mesh/radio-link.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { pauseAfterSendMs, textAirtimeMs } from './airtime.js';
import { type ClockTimer, type MessagingClock, systemClock } from './clock.js';
import { ConversationRepository } from './conversation-repository.js';
import { type DeliverySettings, DeliveryTracker, type NodeFacts } from './delivery.js';
import { resolveRecipient } from './inbound.js';
import type { Message, MessageChange } from './message.js';
import { MessageRepository } from './message-repository.js';
import { renumberTexts } from './renumber.js';
import { SubscriptionRepository } from './subscription-repository.js';

type GatewayEvent =
  | { kind: 'status'; status: RadioStatus }
  | { kind: 'routing'; report: MeshRoutingReport }
  | { kind: 'text'; text: MeshText }
  | { kind: 'heard'; nodeNum: number }
  | { kind: 'renumbered'; oldNodeId: string; newNodeId: string }
  | { kind: 'radioBack'; since: number }
  | { kind: 'expire' }
  | { kind: 'created' }
  | { kind: 'pump' };

const SEND_ASK_TIMEOUT_MS = 5_000;
/** After the radio refused a send, wait this long (or for the link to come back) before the next. */
const SEND_FAILURE_BACKOFF_MS = 5_000;
const PRUNE_INTERVAL_MS = 3_600_000;
const MAX_TIMER_MS = 2 ** 31 - 1;
const utf8 = new TextEncoder();

/**
 * The messaging gateway (docs/architecture.md "Data flows" 2–3): sends queued texts through the radio
 * actor and tracks their delivery; files inbound texts into conversations.
 *
 * The `queued` rows in SQLite are the send queue: nothing waits in memory but the one message
 * being sent. On start, and whenever the radio link comes back, the gateway picks up what is
 * due. Each send goes out with `want_ack` and a fresh random packet id, recorded before the
 * radio sees it; then the p-queue slot stays taken for the airtime share (MESSAGE_AIRTIME_PERCENT)
 * so a burst of messages cannot hog the channel. Texts to one node go out in the order they
 * were posted, one at a time. Routing reports, inbound texts and timeouts are handled one at a
 * time through the mailbox.
 *
 * Held texts (docs/held-texts.md): any packet heard from a node that texts wait for (telemetry,
 * position, nodeinfo, …, by radio or MQTT) makes them due at once; they then queue for airtime
 * like any text, so many texts waking together never exceed the airtime share. Hold ends are
 * timers like ACK deadlines.
 */
export class MessageGatewayActor extends Actor {
  readonly name = 'message-gateway';
  override readonly dependsOn = ['store', 'radio'];
  private repo: MessageRepository | undefined;
  private subscriptions: SubscriptionRepository | undefined;
  private conversations: ConversationRepository | undefined;
  private tracker: DeliveryTracker | undefined;
  private sendQueue: PQueue | undefined;
  private readonly inbox: Mailbox<GatewayEvent>;
  private connected = false;
  private myNodeNum: number | undefined;
  private running = false;
  private dueTimer: ClockTimer | undefined;
  private deadlineTimer: ClockTimer | undefined;
  private nodes: NodeRepository | undefined;
  /** Node numbers that held texts wait for: a packet from one of them wakes its texts. */
  private heldNodes = new Set<number>();
  private clock: MessagingClock;
  private pruneTimer: NodeJS.Timeout | undefined;
  private blockedUntil = 0;
  /** When the link to the radio went, while it is away. */
  private linkLostAt: number | undefined;
  /**
   * Recent spans when our radio was silent or away (gateway clock): an attempt handed to it then
   * that times out later is sent again at once, not held for its node (`releaseSilent`).
   */
  private silences: Array<{ from: number; until: number }> = [];
  /** Ends the airtime pause early (on stop: the next send waits in SQLite, not in a timer). */
  private stopping = new AbortController();

  constructor(
    private readonly deps: {
      bus: HubBus;
      db: Database;
      log: Logger;
      delivery: DeliverySettings;
      airtimePercent: number;
      /** MESSAGE_HOLD_HOURS in ms: the hold of a text stored without one (from the upstream). */
      defaultHoldMs: number;
      clock?: MessagingClock;
    },
  ) {
    super();
    this.clock = deps.clock ?? systemClock;
    this.inbox = this.createMailbox<GatewayEvent>('events', {
      capacity: 10_000,
      overflow: 'reject',
      handle: (event) => this.handle(event),
    });
  }

  /** Tests: the clock to live by (before `start()`); the hub's is the system clock. */
  useClock(clock: MessagingClock): void {
    this.clock = clock;
  }

  async start(): Promise<void> {
    const { bus, db } = this.deps;
    this.repo = new MessageRepository(db);
    this.subscriptions = new SubscriptionRepository(db);
    this.conversations = new ConversationRepository(db);
    this.nodes = new NodeRepository(db);
    this.tracker = new DeliveryTracker(this.repo, this.deps.delivery, (nodeId) => this.nodeFacts(nodeId));
    this.repo.applyDefaultHold(this.deps.defaultHoldMs);
    this.refreshHeldNodes();
    this.sendQueue = new PQueue({ concurrency: 1 });
    this.running = true;
    this.stopping = new AbortController();
    this.inbox.reopen();
    const post = (event: GatewayEvent) => {
      if (!this.inbox.post(event))
        this.deps.log.warn({ kind: event.kind }, 'message gateway inbox full; event dropped');
    };
    // Replayed: the link's current state (and the hub's node number) arrives at once.
    bus.on(this.name, 'radio.status', (status) => post({ kind: 'status', status }), { replay: true });
    bus.handle(this.name, 'messaging.sendPaced', ({ payloadBytes, transmit }) =>
      this.sendPaced(payloadBytes, transmit),
    );
    bus.handle(this.name, 'messaging.airtimeBudget', () => ({ percent: this.deps.airtimePercent }));
    // The radio link keeps wall-clock time; the texts keep the gateway's clock.
    bus.on(this.name, 'radio.quietEnded', ({ quietSince }) =>
      post({ kind: 'radioBack', since: this.clock.now() - (Date.now() - quietSince) }),
    );
    // Delivery is taken from the hub's own radio alone: an ACK "heard" over MQTT proves nothing
    // (README "MQTT: mesh packets and retained messages"; the broker refuses them already).
    bus.on(this.name, 'mesh.routing', (report) => {
      if (report.via === 'radio') post({ kind: 'routing', report });
    });
    bus.on(this.name, 'mesh.text', (text) => post({ kind: 'text', text }));
    // Every packet passes here: only those from a node that texts wait for reach the inbox.
    bus.on(this.name, 'mesh.packet', (packet) => {
      const from = packet.from >>> 0;
      if (this.heldNodes.has(from) && from !== this.myNodeNum) post({ kind: 'heard', nodeNum: from });
    });
    bus.on(this.name, 'node.renumbered', ({ oldNodeId, newNodeId }) =>
      post({ kind: 'renumbered', oldNodeId, newNodeId }),
    );
    bus.on(this.name, 'message.updated', (change) => {
      if (change.kind === 'created' && change.message.direction === 'outbound') post({ kind: 'created' });
    });
    post({ kind: 'expire' });
    this.pruneTimer = setInterval(() => this.repo?.pruneIdempotencyKeys(), PRUNE_INTERVAL_MS);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.deps.bus.removeOwner(this.name);
    this.inbox.close();
    this.dueTimer?.cancel();
    this.deadlineTimer?.cancel();
    clearInterval(this.pruneTimer);
    this.sendQueue?.clear();
    this.stopping.abort();
    await this.inbox.idle();
    // A send in progress finishes (bounded by the ask timeout); its airtime pause was cut short.
    await this.sendQueue?.onIdle();
  }

  override describe(): Record<string, unknown> {
    return { radio: this.connected ? 'connected' : 'waiting', sending: this.sendQueue?.pending ?? 0 };
  }

  /**
   * A packet from outside messaging (a mesh API client, src/mesh-api) takes a turn in the
   * same airtime-paced send queue as the hub's texts: `transmit` runs in the next free slot, then
   * the slot stays taken for the airtime share of `payloadBytes`. Rejects when the gateway is
   * stopped or `transmit` fails.
   */
  async sendPaced(payloadBytes: number, transmit: () => Promise<void>): Promise<void> {
    const queue = this.sendQueue;
    if (!this.running || !queue) throw new Error('the message gateway is not running');
    await queue
      .add(async () => {
        await transmit();
        const pauseMs = pauseAfterSendMs(textAirtimeMs(payloadBytes), this.deps.airtimePercent);
        if (pauseMs > 0 && this.running) await this.clock.pause(pauseMs, this.stopping.signal);
      })
      .finally(() => {
        // pump() waits while the queue is busy; it must look again once this turn is over.
        if (this.running) this.inbox.post({ kind: 'pump' });
      });
  }

  private handle(event: GatewayEvent): void {
    if (!this.running) return;
    switch (event.kind) {
      case 'status':
        this.onRadioStatus(event.status);
        break;
      case 'routing':
        // The gateway's clock, not the packet's: every transition of a text on one clock.
        this.publish(this.tracker!.onRouting(event.report, this.clock.now()));
        this.refreshHeldNodes();
        this.scheduleDeadline();
        this.pump();
        break;
      case 'text':
        this.onText(event.text);
        break;
      case 'heard': {
        const nodeId = nodeIdFromNum(event.nodeNum);
        const woken = this.repo!.wakeHeld(nodeId, this.clock.now());
        if (woken > 0) {
          this.deps.log.info({ node: nodeId, texts: woken }, 'node heard again; its held texts are due');
          this.pump();
        }
        break;
      }
      case 'renumbered':
        this.onRenumbered(event.oldNodeId, event.newNodeId);
        break;
      case 'radioBack':
        this.releaseHeld(event.since);
        break;
      case 'expire': {
        const now = this.clock.now();
        this.publish(this.tracker!.expire(now));
        this.publish(this.tracker!.expireHolds(now));
        this.releaseSilent(now);
        this.refreshHeldNodes();
        this.scheduleDeadline();
        this.pump();
        break;
      }
      case 'created':
        // A text from the upstream comes without a hold: it gets this hub's.
        this.repo!.applyDefaultHold(this.deps.defaultHoldMs);
        this.scheduleDeadline();
        this.pump();
        break;
      case 'pump':
        this.pump();
        break;
    }
  }

  private onRadioStatus(status: RadioStatus): void {
    if (status.myNodeNum !== undefined) this.myNodeNum = status.myNodeNum >>> 0;
    const connected = status.state === 'connected';
    if (!connected && this.connected) this.linkLostAt = this.clock.now();
    if (connected && !this.connected) this.blockedUntil = 0;
    this.connected = connected;
    if (connected && this.linkLostAt !== undefined) {
      // A stalled radio is dropped ANSWER_TIMEOUT_MS after it went quiet.
      this.releaseHeld(this.linkLostAt - ANSWER_TIMEOUT_MS);
      this.linkLostAt = undefined;
    }
    if (connected) this.pump();
  }

  /**
   * Our own radio was silent or away since `since`: a text that missed its ACK from then on was
   * held as if its node were out of range, and burnt its quick retries, for nothing the node did.
   * It goes again now (and its followers with it), not when the node is next heard.
   */
  private releaseHeld(since: number): void {
    const repo = this.repo;
    if (!repo) return;
    const now = this.clock.now();
    this.silences.push({ from: since, until: now });
    const released = repo.releaseHeldSince(since, now) + repo.releaseSentDuring(since, now, now);
    if (released === 0) return;
    this.deps.log.info({ texts: released }, 'our radio answers again; texts held meanwhile are due');
    this.refreshHeldNodes();
    this.pump();
  }

  /**
   * An attempt handed to the radio while it was silent and still waiting for its ACK when the
   * radio answered again times out afterwards: it goes again now, not when its node is next heard
   * (at most once a minute). A silence is forgotten once every attempt made in it has timed out.
   */
  private releaseSilent(now: number): void {
    const ackTimeoutMs = this.tracker!.ackTimeoutMs;
    this.silences = this.silences.filter((s) => now <= s.until + ackTimeoutMs + 1_000);
    let released = 0;
    for (const s of this.silences) released += this.repo!.releaseSentDuring(s.from, s.until, now);
    if (released === 0) return;
    this.deps.log.info(
      { texts: released },
      'texts sent while our radio was silent got no acknowledgement; sent again now',
    );
  }

  private onText(text: MeshText): void {
    const hub = this.myNodeNum;
    // Channel (broadcast) chatter and texts to other nodes are not conversations with the hub.
    if (hub === undefined || text.to !== hub || text.from === hub) return;
    const nodeId = nodeIdFromNum(text.from);
    const recipient = resolveRecipient(
      text.text,
      nodeId,
      this.conversations!,
      this.subscriptions!,
      text.receivedAt,
    );
    const message = this.repo!.createInbound({
      owner: recipient?.owner ?? null,
      ownerName: recipient?.ownerName ?? null,
      nodeId,
      targetNodeId: nodeIdFromNum(hub),
      text: text.text,
      packetId: text.id,
      at: text.receivedAt,
    });
    if (!message) return;
    if (!recipient)
      this.deps.log.info({ from: nodeId }, 'inbound text matches no subscriber; kept for admins');
    this.publish([{ message, kind: 'created' }]);
  }

  /** Starts the next due message unless one is being sent, the radio is away, or nothing is due. */
  private pump(): void {
    const queue = this.sendQueue;
    if (!this.running || !queue || !this.connected) return;
    if (queue.size + queue.pending > 0) return;
    const now = this.clock.now();
    if (now < this.blockedUntil) {
      this.wakeAt(this.blockedUntil);
      return;
    }
    const message = this.repo!.nextDue(now);
    if (!message) {
      const due = this.repo!.earliestDue();
      if (due !== undefined) this.wakeAt(due);
      return;
    }
    queue
      .add(() => this.attempt(message))
      .catch((error: unknown) =>
        this.deps.log.error({ err: error, message: message.id }, 'send attempt failed'),
      )
      .finally(() => {
        if (this.running) this.inbox.post({ kind: 'pump' });
      });
  }

  private async attempt(message: Message): Promise<void> {
    const repo = this.repo!;
    const to = nodeNumFromId(message.nodeId);
    if (to === undefined) return;
    let packetId: number;
    do packetId = randomInt(1, 0xffffffff);
    while (repo.packetIdInUse(packetId));
    const now = this.clock.now();
    if (!repo.beginAttempt(message, packetId, now, now + this.tracker!.ackTimeoutMs)) return;
    this.scheduleDeadline();
    const payload = utf8.encode(message.text);
    try {
      await this.deps.bus.ask(
        'radio.send',
        { to, id: packetId, portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload, wantAck: true },
        { timeoutMs: SEND_ASK_TIMEOUT_MS },
      );
    } catch (error) {
      // The radio never took it: the attempt does not count; the message waits for the link.
      repo.abandonAttempt(message, packetId, this.clock.now());
      this.blockedUntil = this.clock.now() + SEND_FAILURE_BACKOFF_MS;
      this.deps.log.info(
        { message: message.id, reason: (error as Error).message },
        'radio not ready; message stays queued',
      );
      return;
    }
    this.deps.log.debug(
      { message: message.id, packetId, attempt: message.attempts + 1 },
      'text handed to the radio',
    );
    const pauseMs = pauseAfterSendMs(textAirtimeMs(payload.length), this.deps.airtimePercent);
    if (pauseMs > 0 && this.running) await this.clock.pause(pauseMs, this.stopping.signal);
  }

  private wakeAt(at: number): void {
    this.dueTimer?.cancel();
    this.dueTimer = this.clock.timer(Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now()) + 5), () =>
      this.inbox.post({ kind: 'pump' }),
    );
  }

  /**
   * A node renumbered by firmware 2.8: its texts and conversations move to the new id
   * (renumber.ts); the new number was just heard, so texts queued for the old one are due now.
   */
  private onRenumbered(oldNodeId: string, newNodeId: string): void {
    const moved = renumberTexts(this.deps.db, oldNodeId, newNodeId, this.clock.now());
    this.refreshHeldNodes();
    this.deps.log.info({ old: oldNodeId, node: newNodeId, ...moved }, 'texts moved to the renumbered node');
    this.scheduleDeadline();
    this.pump();
  }

  /** The next ACK deadline or hold end, whichever comes first. */
  private scheduleDeadline(): void {
    this.deadlineTimer?.cancel();
    const deadline = this.repo?.earliestDeadline();
    const holdEnd = this.repo?.earliestHoldEnd();
    const at =
      deadline === undefined ? holdEnd : holdEnd === undefined ? deadline : Math.min(deadline, holdEnd);
    if (at === undefined || !this.running) return;
    this.deadlineTimer = this.clock.timer(
      Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now()) + 5),
      () => this.inbox.post({ kind: 'expire' }),
    );
  }

  private refreshHeldNodes(): void {
    const held = new Set<number>();
    for (const nodeId of this.repo!.heldNodes()) {
      const num = nodeNumFromId(nodeId);
      if (num !== undefined) held.add(num >>> 0);
    }
    this.heldNodes = held;
  }

  private nodeFacts(nodeId: string): NodeFacts {
    const node = this.nodes?.get(nodeId);
    const name = node?.longName || node?.shortName || nodeId;
    return node?.lastHeard === undefined ? { name } : { name, lastHeardAt: node.lastHeard };
  }

  private publish(changes: MessageChange[]): void {
    for (const change of changes) this.deps.bus.emit('message.updated', change);
  }
}
