/**
 * Sigma detections (issue 29; README "Sigma detections"): the rules in SIGMA_RULES_DIR, read at
 * start-up (a change needs a restart), run as alert rules. Every refused rule is logged with its
 * file, title, id and reason, and listed by `GET /api/rules/sigma`.
 */
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { ModuleMetrics } from '../../../src/module.js';
import type { Database } from '../../../src/store/database.js';
import { AlertRepository } from '../alerts/alert-repository.js';
import type { ApiSigmaReport } from '../alerts/schemas.js';
import type { AuditConfig } from '../settings.js';
import { installSigmaRules } from './install.js';
import { loadSigmaRules } from './load.js';

/** Loads the folder (a bad folder throws AuditConfigError: one start-up line) and installs its rules. */
export function setUpSigma(
  config: AuditConfig,
  db: Database,
  log: KernelLogger,
  metrics?: ModuleMetrics,
): ApiSigmaReport {
  const dir = config.sigmaRulesDir;
  const load = dir ? loadSigmaRules(dir) : { rules: [], refused: [] };
  const { installed, refused } = installSigmaRules(db, AlertRepository.on(db), load.rules);
  const report: ApiSigmaReport = {
    configured: dir !== undefined,
    loaded: installed.map((r) => ({ rule_id: String(r.ruleId), file: r.file, title: r.title, id: r.id })),
    refused: [...load.refused, ...refused],
  };
  const gauge = metrics?.gauge({
    name: 'sigma_rules',
    help: 'Sigma rules read from SIGMA_RULES_DIR at start-up, by state (loaded, refused)',
    labelNames: ['state'],
  });
  gauge?.set({ state: 'loaded' }, report.loaded.length);
  gauge?.set({ state: 'refused' }, report.refused.length);
  for (const r of report.refused) {
    log.warn(
      { file: r.file, title: r.title, id: r.id, reason: r.reason },
      `Sigma rule not loaded: ${r.reason}`,
    );
  }
  if (dir) {
    log.info({ dir, loaded: report.loaded.length, refused: report.refused.length }, 'Sigma rules loaded');
    if (!config.features.alertsEnabled && installed.length) {
      log.warn({}, 'SIGMA_RULES_DIR is set but ALERTS_ENABLED is false: the Sigma rules are not evaluated');
    }
  }
  return report;
}
