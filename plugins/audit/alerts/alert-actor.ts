/**
 * The alert rules at work (ALERTS_ENABLED=true): evaluates each batch of newly stored events as
 * the writer commits it (engine.ts), then announces each alert on the bus — the MQTT broker
 * publishes it on `meshhub/audit/alerts` for admins — and hands it to every configured destination
 * (sender.ts: the webhook, Microsoft Teams, Slack).
 */
import type { HubBus } from '../../../src/domain/events.js';
import { Actor, type KernelLogger } from '../../../src/kernel/actor.js';
import type { ModuleMetrics } from '../../../src/module.js';
import { savedSearchTests } from '../saved/run.js';
import type { AuditStore } from '../store/audit-store.js';
import { AlertRepository } from './alert-repository.js';
import { toApiAlert } from './api-json.js';
import { AlertEngine } from './engine.js';
import { AlertDelivery, type AlertSender, type DeliveryTestOptions } from './sender.js';
import type { AlertConfig } from './settings.js';

export interface AlertActorDeps {
  config: AlertConfig;
  store: AuditStore;
  bus: HubBus;
  metrics: ModuleMetrics;
  log: KernelLogger;
  /** Tests: the destinations' fetch, DNS and retry delays. */
  webhook?: DeliveryTestOptions;
}

export class AlertActor extends Actor {
  readonly name = 'audit-alerts';
  override readonly dependsOn = ['store'];
  override readonly required = false;
  readonly engine: AlertEngine;
  readonly delivery: AlertDelivery;
  private off: (() => void) | undefined;

  constructor(private readonly deps: AlertActorDeps) {
    super();
    const { config, metrics, log, bus } = deps;
    const alerts = () => AlertRepository.on(deps.store.repos().db);
    const fired = metrics.counter({
      name: 'alerts_fired_total',
      help: 'Alerts fired by audit alert rules, by severity',
      labelNames: ['severity'],
    });
    const deliveries = metrics.counter({
      name: 'alert_deliveries_total',
      help: 'Alert deliveries by destination (webhook, teams, slack) and outcome (delivered, failed after retries, dropped: queue full)',
      labelNames: ['destination', 'outcome'],
    });
    const errors = metrics.counter({
      name: 'alert_evaluation_errors_total',
      help: 'Stored batches whose alert evaluation failed (see the log)',
    });
    this.delivery = new AlertDelivery({
      config,
      store: alerts,
      log,
      onOutcome: (destination, outcome) => deliveries.inc({ destination, outcome }),
      ...deps.webhook,
    });
    this.engine = new AlertEngine({
      store: alerts,
      timeZone: config.timeZone,
      webhook: this.delivery.configured,
      log,
      savedSearches: savedSearchTests(deps.store),
      onError: () => errors.inc(),
      onFired: (rows) => {
        for (const row of rows) {
          fired.inc({ severity: row.severity });
          bus.emit('audit.alert', { alert: toApiAlert(row) });
        }
        this.delivery.enqueue(rows);
      },
    });
  }

  async start(): Promise<void> {
    this.delivery.start();
    this.off = this.deps.store.onStored(this.engine.onStored);
  }

  async stop(): Promise<void> {
    this.off?.();
    this.off = undefined;
    await this.delivery.stop();
  }

  override describe(): Record<string, unknown> {
    return {
      rules_enabled: this.engine.rules().length,
      events_evaluated: this.engine.evaluated,
      alerts_fired: this.engine.fired,
      webhook: senderState(this.delivery.sender('webhook')),
      teams: senderState(this.delivery.sender('teams')),
      slack: senderState(this.delivery.sender('slack')),
    };
  }
}

/** A destination in /health: its queue and last error (never its URL), or `off`. */
function senderState(sender: AlertSender | undefined) {
  return sender ? { queued: sender.queued, last_error: sender.lastError ?? null } : 'off';
}
