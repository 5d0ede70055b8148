/**
 * Runs the maintenance routine on AUDIT_MAINTENANCE_CRON: retention (RETENTION_DAYS), duplicate
 * removal, the audit trail's retention, forgotten content blobs and unused dictionary names —
 * each in bounded chunks (store/maintenance.ts).
 */
import { Actor, type KernelLogger } from '../../src/kernel/actor.js';
import type { AuditConfig } from './settings.js';
import type { AuditStore } from './store/audit-store.js';
import { type MaintenanceReport, runMaintenance } from './store/maintenance.js';

export class AuditMaintenanceActor extends Actor {
  readonly name = 'audit-maintenance';
  override readonly dependsOn = ['store'];
  override readonly required = false;
  private running: Promise<MaintenanceReport> | undefined;
  private lastRun: ({ at: string } & MaintenanceReport) | undefined;

  constructor(private readonly deps: { config: AuditConfig; store: AuditStore; log: KernelLogger }) {
    super();
  }

  async start(): Promise<void> {
    this.deps.store.repos();
  }

  /** One pass; concurrent calls share the pass in flight. */
  runOnce(now = Date.now()): Promise<MaintenanceReport> {
    if (this.running) return this.running;
    const repos = this.deps.store.repos();
    this.running = runMaintenance(repos.db, repos.dictionaries, {
      now,
      retentionDays: this.deps.config.retentionDays,
      trailRetentionDays: this.deps.config.trailRetentionDays,
    })
      .then((report) => {
        this.lastRun = { at: new Date(now).toISOString(), ...report };
        this.deps.log.info(report, 'audit maintenance done');
        return report;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  override describe(): Record<string, unknown> {
    return this.lastRun ? { last_run: this.lastRun } : {};
  }

  async stop(): Promise<void> {
    await this.running?.catch(() => undefined);
  }
}
