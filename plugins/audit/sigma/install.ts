/**
 * Sigma rules become alert rules (alerts/): one rule row each, so alerts, MQTT and the webhook
 * are the same path as for rules written over the API; the row is read-only there and matched by
 * the rule's own predicate (AlertRepository.fileRules). `audit_sigma_rules` remembers which row
 * belongs to which Sigma rule (its id, or file and title), so a restart keeps the rule's id and
 * its alerts' link; a rule gone from the folder loses its row (its alerts stay).
 */

import type { ComponentMigration } from '../../../src/store/component-migrations.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import type { Database } from '../../../src/store/database.js';
import { type AlertRepository, FILE_RULE_BY, RuleNameTakenError } from '../alerts/alert-repository.js';
import { MAX_RULES, type RuleBody } from '../alerts/condition.js';
import { recordOperations } from './compile.js';
import type { LoadedSigmaRule, RefusedSigmaRule } from './load.js';

export const SIGMA_COMPONENT = 'audit_sigma';

export const SIGMA_MIGRATIONS: readonly ComponentMigration[] = [
  {
    version: 1,
    name: 'issue 29: the alert rule row of each Sigma rule',
    up: `
      CREATE TABLE audit_sigma_rules (
        sigma_key TEXT PRIMARY KEY,
        rule_id INTEGER NOT NULL UNIQUE
      ) WITHOUT ROWID;
    `,
  },
];

export interface InstalledSigmaRule {
  ruleId: number;
  file: string;
  title: string;
  id: string | null;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function installSigmaRules(
  db: Database,
  alerts: AlertRepository,
  rules: readonly LoadedSigmaRule[],
  now = Date.now(),
): { installed: InstalledSigmaRule[]; refused: RefusedSigmaRule[] } {
  alerts.fileRules.clear();
  const known = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_sigma_rules'")
    .get();
  // A hub that never had Sigma rules gets no table (and no pre-migration backup) for them.
  if (!rules.length && !known) return { installed: [], refused: [] };
  migrateComponent(db, SIGMA_COMPONENT, SIGMA_MIGRATIONS);
  const installed: InstalledSigmaRule[] = [];
  const refused: RefusedSigmaRule[] = [];
  db.transaction(() => {
    const rows = db.prepare('SELECT sigma_key, rule_id FROM audit_sigma_rules').all() as Array<{
      sigma_key: string;
      rule_id: number;
    }>;
    const existing = new Map(rows.map((r) => [r.sigma_key, r.rule_id]));
    const keep = new Set<string>();
    const save = db.prepare(
      'INSERT INTO audit_sigma_rules (sigma_key, rule_id) VALUES (?, ?) ON CONFLICT (sigma_key) DO UPDATE SET rule_id = excluded.rule_id',
    );
    for (const { file, rule } of rules) {
      const key = rule.id ? `id:${rule.id.toLowerCase()}` : `file:${file}#${rule.title}`;
      const body: RuleBody = {
        name: clip(`Sigma: ${rule.title}`, 120),
        description: clip(`${rule.description}${rule.description ? ' ' : ''}(Sigma file ${file})`, 2000),
        severity: rule.severity,
        enabled: true,
        condition: {},
      };
      const by = `${FILE_RULE_BY}${file}`;
      const refuse = (reason: string) => refused.push({ file, title: rule.title, id: rule.id, reason });
      try {
        let id = existing.get(key);
        const before = id === undefined ? undefined : alerts.rule(id);
        if (id !== undefined && before) {
          if (
            before.name !== body.name ||
            before.description !== body.description ||
            before.severity !== body.severity ||
            !before.enabled
          )
            alerts.updateRule(id, body, {}, by, now);
        } else {
          if (alerts.ruleCount() >= MAX_RULES) {
            refuse(`there are ${MAX_RULES} alert rules already`);
            continue;
          }
          id = alerts.createRule(body, {}, by, now).id;
          save.run(key, id);
        }
        keep.add(key);
        const { sources, product, operations } = rule;
        alerts.fileRules.set(id, {
          file,
          sigmaId: rule.id,
          matches: (e, memo) => sources.has(e.source ?? '') && rule.matches(memo.record()),
          scope: {
            sources,
            pin: operations && {
              key: `sigma:${product}`,
              values: operations,
              read: (_e, memo) => recordOperations(product, memo.record()),
            },
          },
        });
        installed.push({ ruleId: id, file, title: rule.title, id: rule.id });
      } catch (error) {
        if (!(error instanceof RuleNameTakenError)) throw error;
        refuse(`another alert rule is called "${body.name}"`);
      }
    }
    const drop = db.prepare('DELETE FROM audit_sigma_rules WHERE sigma_key = ?');
    for (const [key, ruleId] of existing) {
      if (keep.has(key)) continue;
      alerts.deleteRule(ruleId);
      drop.run(key);
    }
    // The evaluator recompiles: the predicates are new even where no row changed.
    alerts.revision++;
  })();
  return { installed, refused };
}
