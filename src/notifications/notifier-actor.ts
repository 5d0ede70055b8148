/**
 * The notifications' one actor: bus events through the rule engine, each firing stored, put on
 * the live stream and MQTT (`meshhub/alerts/<rule id>/<node_id>`, retained state for Home
 * Assistant), and handed to the deliveries (webhooks, Web Push) unless quiet hours hold.
 * It also tells a subscriber, on their own push subscriptions only, when a reply to them arrives
 * or a text of theirs fails (messaging's `message.updated`).
 */
import type { HubBus, NotificationFired } from '../domain/events.js';
import { Actor } from '../kernel/actor.js';
import type { Logger } from '../log.js';
import '../messaging/events.js';
import { Secret } from '../config/secret.js';
import type { MessageChange } from '../messaging/message.js';
import type { ModuleMqtt } from '../module.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import type { Deliveries, WebhookEvent, WebhookTarget } from './delivery.js';
import { RuleEngine, type Transition } from './engine.js';
import { isQuiet, parseQuietHours, type QuietHours } from './quiet-hours.js';
import type { PushMessage } from './schemas.js';
import type { FiringRow, NotificationStore, Rule } from './store.js';

export const ALERTS_TOPIC_ROOT = 'meshhub/alerts';

export function alertTopic(ruleId: number, nodeId: string): string {
  return `${ALERTS_TOPIC_ROOT}/${ruleId}/${nodeId}`;
}

export function firingJson(f: FiringRow): NotificationFired {
  return {
    id: f.id,
    rule_id: f.ruleId,
    kind: f.kind,
    node_id: f.nodeId,
    subject: f.subject,
    at: new Date(f.at).toISOString(),
    message: f.message,
    quiet: f.quiet,
  };
}

export interface NotifierDeps {
  bus: HubBus;
  db: Database;
  log: Logger;
  store: NotificationStore;
  deliveries: Deliveries;
  mqtt: ModuleMqtt;
  checkMs: number;
  globalWebhook: WebhookTarget | undefined;
  quietHours: QuietHours | undefined;
  timeZone: string;
  now?: () => number;
}

export class NotifierActor extends Actor {
  readonly name = 'notifications';
  readonly engine: RuleEngine;
  private timer: NodeJS.Timeout | undefined;
  private readonly offs: Array<() => void> = [];
  private readonly now: () => number;
  private readonly tally: { firings: Map<string, number>; suppressed: Map<string, number> } = {
    firings: new Map(),
    suppressed: new Map(),
  };

  constructor(private readonly deps: NotifierDeps) {
    super();
    this.now = deps.now ?? Date.now;
    this.engine = new RuleEngine(this.now);
  }

  async start(): Promise<void> {
    const { bus, store, db } = this.deps;
    this.reloadRules();
    this.engine.knowNodes(new NodeRepository(db).list());
    this.engine.restoreLastFired(store.lastFired());
    this.offs.push(
      bus.on(this.name, 'node.updated', (u) => this.apply(this.engine.onNodeUpdated(u))),
      bus.on(this.name, 'device.metrics', (s) => this.apply(this.engine.onDeviceMetrics(s))),
      bus.on(this.name, 'reading.stored', ({ readings }) => this.apply(this.engine.onReadings(readings))),
      bus.on(this.name, 'mesh.link', (link) => this.apply(this.engine.onLink(link))),
      bus.on(this.name, 'message.updated', (change) => this.messageChanged(change)),
      bus.on(this.name, 'node.renumbered', ({ oldNodeId, newNodeId }) =>
        this.renumbered(oldNodeId, newNodeId),
      ),
    );
    this.timer = setInterval(() => this.check(), this.deps.checkMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const off of this.offs.splice(0)) off();
    await this.deps.deliveries.stop();
  }

  /** Rules changed (the API): the engine reads them again. */
  reloadRules(): void {
    const rules = this.deps.store.rules();
    this.engine.setRules(rules);
    this.ruleCount = rules.length;
  }

  /** Rules stored (enabled or not), for the metrics. */
  ruleCount = 0;

  /** The periodic check for silence (tests call it with their own clock). */
  check(): void {
    this.apply(this.engine.check());
  }

  takeTally(which: 'firings' | 'suppressed'): Map<string, number> {
    const t = this.tally[which];
    const copy = new Map(t);
    t.clear();
    return copy;
  }

  private apply(transitions: Transition[]): void {
    for (const t of transitions) {
      try {
        this.transition(t);
      } catch (err) {
        this.deps.log.error({ err, rule: t.rule.id }, 'a notification firing failed');
      }
    }
  }

  private transition(t: Transition): void {
    const { rule } = t;
    this.deps.mqtt.publish(
      alertTopic(rule.id, t.nodeId),
      JSON.stringify({
        state: t.state === 'on' ? 'ON' : 'OFF',
        rule_id: rule.id,
        rule: rule.name,
        kind: rule.kind,
        node_id: t.nodeId,
        subject: t.subject,
        at: new Date(t.at).toISOString(),
        message: t.message,
      }),
      { retain: true },
    );
    if (t.state === 'off') return;
    const count = (m: Map<string, number>) => m.set(rule.kind, (m.get(rule.kind) ?? 0) + 1);
    if (t.suppressed) {
      count(this.tally.suppressed);
      return;
    }
    count(this.tally.firings);
    const quietHours = rule.quiet_hours
      ? (parseQuietHours(rule.quiet_hours) as QuietHours)
      : this.deps.quietHours;
    const quiet = isQuiet(quietHours, t.at, this.deps.timeZone);
    const row = this.deps.store.addFiring({
      ruleId: rule.id,
      kind: rule.kind,
      nodeId: t.nodeId,
      subject: t.subject,
      at: t.at,
      message: t.message,
      quiet,
    });
    this.deps.bus.emit('notification.fired', firingJson(row));
    if (quiet) return;
    this.deliver(rule, row, t);
  }

  private deliver(rule: Rule, row: FiringRow, t: Transition): void {
    const { deliveries, globalWebhook, store } = this.deps;
    const event: WebhookEvent = {
      firing_id: row.id,
      rule_id: rule.id,
      rule: rule.name,
      kind: rule.kind,
      node_id: t.nodeId,
      subject: t.subject,
      state: t.state,
      at: new Date(t.at).toISOString(),
      title: rule.name,
      message: t.message,
    };
    if (globalWebhook) deliveries.webhook(globalWebhook, event);
    if (rule.webhook) {
      deliveries.webhook(
        {
          url: new URL(rule.webhook.url),
          format: rule.webhook.format,
          ...(rule.webhook.secret ? { secret: new Secret(rule.webhook.secret) } : {}),
        },
        event,
      );
    }
    if (rule.push) {
      const message: PushMessage = {
        title: rule.name,
        body: t.message,
        tag: `rule-${rule.id}-${t.subject}`,
        url: '/notifications',
      };
      deliveries.pushTo(store.subscriptions({ admins: true }), message);
    }
  }

  /** Rules that name the old number name the new one; the engine moves what it knows. */
  private renumbered(oldNodeId: string, newNodeId: string): void {
    const { store } = this.deps;
    for (const rule of store.rules()) {
      if (!rule.nodes.includes(oldNodeId)) continue;
      const { id, ...spec } = rule;
      const nodes = [...new Set(rule.nodes.map((n) => (n === oldNodeId ? newNodeId : n)))];
      store.updateRule(id, { ...spec, nodes }, this.now());
    }
    this.engine.onRenumbered(oldNodeId, newNodeId);
    this.reloadRules();
  }

  /** A subscriber hears of a reply or a failed text on their own subscriptions only. */
  private messageChanged(change: MessageChange): void {
    const m = change.message;
    if (!m.owner) return;
    let message: PushMessage | undefined;
    if (change.kind === 'created' && m.direction === 'inbound') {
      message = {
        title: `Reply from ${m.nodeId}`,
        body: m.text,
        tag: `message-${m.id}`,
        url: `/chat/${m.nodeId}`,
      };
    } else if (change.kind === 'status' && m.direction === 'outbound' && m.status === 'failed') {
      message = {
        title: `Text to ${m.nodeId} failed`,
        body: `${m.failureReason ?? m.failureCode ?? 'not delivered'}: “${m.text}”`,
        tag: `message-${m.id}`,
        url: `/chat/${m.nodeId}`,
      };
    }
    if (!message) return;
    const own = this.deps.store.subscriptions({ principal: m.owner });
    if (own.length > 0) this.deps.deliveries.pushTo(own, message);
  }
}
