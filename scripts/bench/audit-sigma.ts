/**
 * Sigma rules against audit ingest (issue 29): running 100 Sigma rules (SIGMA_RULES_DIR) costs
 * ingest at most 20% of its events/s. The same ingest as the alert-rule bench (audit-rules.ts:
 * 100k fetched records → normalise → dictionaries → dedupe insert, batches of 1000, both sides
 * in the same run, pages in turns); "ours" has 100 rule files loaded and installed as start-up
 * does, and the AlertEngine on the stored-events hook. The rules are of every supported kind:
 * m365 and azure/auditlogs log sources, plain values, contains/startswith/endswith, wildcards,
 * re, cidr, exists, cased, keywords, and conditions with not, `1 of`, `all of`; in SigmaHQ's
 * proportions (most select an exact, rare operation: detection() says how).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { AlertRepository } from '../../plugins/audit/alerts/alert-repository.js';
import { AlertEngine } from '../../plugins/audit/alerts/engine.js';
import { installSigmaRules } from '../../plugins/audit/sigma/install.js';
import { loadSigmaRules } from '../../plugins/audit/sigma/load.js';
import type { openDatabase } from '../../src/store/database.js';
import { actorName, INGEST_ROWS, upstreamRecords } from './audit-fixture.js';
import { ingestRound } from './audit-rules.js';
import { tempDir } from './lib/readings.js';
import { type BenchResult, compare } from './report.js';

const RULES = 100;
const WORKLOADS = ['Exchange', 'SharePoint', 'MicrosoftTeams'];

/**
 * The detection of rule `i`: twenty shapes, five rules each, in SigmaHQ's proportions. Most of
 * SigmaHQ's m365 and azure/auditlogs rules select an exact operation (`eventName`/`Operation`/
 * `properties.message`, alone or with a status, a user or a parameter), and they watch rare
 * operations: here 13 shapes (65 rules) pin one, aimed at the fixture's rarer operations
 * (12–24 of 25, 0.1–3% of a service's events) or at operations the fixture never holds (as
 * most of SigmaHQ's name operations an ordinary day does not see); 7 shapes (35 rules) pin
 * none (contains, endswith, wildcards, re, cidr, keywords, `1 of` over other fields) and are
 * tried on every event.
 */
function detection(i: number): { product: string; service: string; body: string } {
  const op = 12 + (i % 13);
  const w = WORKLOADS[i % 3]!;
  const m365 = (body: string, service = 'audit') => ({ product: 'm365', service, body });
  const azure = (body: string) => ({ product: 'azure', service: 'auditlogs', body });
  switch (i % 20) {
    // Pinned to an exact operation.
    case 0:
      return m365(
        `  selection:\n    Operation: ${w}Operation${op}\n    ResultStatus: Failed\n  condition: selection`,
      );
    case 1:
      return m365(
        `  selection:\n    eventName:\n      - ${w}Operation${op}\n      - New-InboxRule${i}\n    UserId|startswith: '${actorName(100 + i).slice(0, 6)}'\n  condition: selection`,
      );
    case 2:
      return m365(
        `  selection:\n    Operation: ${w}Operation${op}\n  filter:\n    ResultStatus: Succeeded\n  condition: selection and not filter`,
      );
    case 3:
      return m365(
        `  selection:\n    eventSource: Exchange\n    eventName: Add-MailboxPermission${i}\n    status: Succeeded\n  condition: selection`,
      );
    case 4:
      return m365(
        `  sel_op:\n    Operation: ExchangeOperation${op}\n  sel_fail:\n    ResultStatus: Failed\n  condition: all of sel_*`,
        'exchange',
      );
    case 5:
      return m365(
        `  selection:\n    Operation: ${w}Operation${op}\n  keywords:\n    - 'doc-9'\n  condition: selection and keywords`,
      );
    case 6:
      return azure(
        `  selection:\n    properties.message: Directory operation ${op}\n    Result: failure\n  condition: selection`,
      );
    case 7:
      return azure(
        `  selection:\n    OperationName:\n      - Add member to role${i}\n      - Directory operation ${op}\n    InitiatedBy.user.userPrincipalName|endswith: '${i}@contoso.com'\n  condition: selection`,
      );
    case 8:
      return m365(
        `  selection:\n    Operation: ${w}Operation${op}\n    ObjectId|contains: '/s${op}/doc-9'\n  condition: selection`,
      );
    case 9:
      return m365(
        `  selection:\n    eventSource: ${w}\n    eventName: ${w}Operation${op}\n    status: Failed\n  condition: selection`,
      );
    case 10:
      return m365(
        `  selection:\n    Operation|cased: ${w}Operation${op}\n    ResultStatus|exists: false\n  condition: selection`,
      );
    case 11:
      return m365(`  selection:\n    eventName: Set-Mailbox${i}\n  condition: selection`, 'exchange');
    case 12:
      return m365(
        `  selection_a:\n    Operation: Disable Strong Authentication${i}\n  selection_b:\n    Operation: ${w}Operation${op}\n    ResultStatus: Failed\n  condition: 1 of selection_*`,
      );
    // Pinned to none: tried on every event.
    case 13:
      return m365(
        `  selection:\n    Operation|endswith: 'Operation${op}'\n    UserId|startswith: '${actorName(100 + i).slice(0, 6)}'\n  condition: selection`,
      );
    case 14:
      return m365(`  selection:\n    UserId|re: '^[a-z]+\\.kowalski${i}[0-9]@'\n  condition: selection`);
    case 15:
      return m365(
        `  sel_op:\n    Operation|contains: 'Operation${op}'\n  sel_fail:\n    ResultStatus: Failed\n  condition: all of sel_*`,
        'exchange',
      );
    case 16:
      return m365(`  keywords:\n    - 'doc-${100 + i}.docx'\n  condition: keywords`);
    case 17:
      return m365(`  selection:\n    ClientIP|cidr: '10.${i}.0.0/16'\n  condition: selection`);
    case 18:
      return m365(
        `  selection:\n    ResultStatus|exists: false\n    Operation: '*Operation${op}'\n  condition: selection`,
      );
    default:
      return azure(
        `  a:\n    TargetResources.displayName: Global Administrator ${i}\n  b:\n    InitiatedBy.user.userPrincipalName|endswith: '${i}@contoso.com'\n  condition: 1 of them`,
      );
  }
}

export function writeRules(dir: string): void {
  for (let i = 0; i < RULES; i++) {
    const d = detection(i);
    writeFileSync(
      join(dir, `rule-${String(i).padStart(3, '0')}.yml`),
      `title: bench rule ${i}\nlevel: medium\nlogsource:\n  product: ${d.product}\n  service: ${d.service}\ndetection:\n${d.body}\n`,
    );
  }
}

export async function run(): Promise<BenchResult[]> {
  const records = upstreamRecords(INGEST_ROWS, 7);
  const rulesDir = tempDir('audit-sigma-rules');
  writeRules(rulesDir.dir);
  const loaded = loadSigmaRules(rulesDir.dir);
  if (loaded.refused.length || loaded.rules.length !== RULES) {
    throw new Error(`expected ${RULES} loaded Sigma rules: ${JSON.stringify(loaded.refused[0])}`);
  }
  const withSigma = (db: ReturnType<typeof openDatabase>) => {
    const store = AlertRepository.on(db);
    installSigmaRules(db, store, loadSigmaRules(rulesDir.dir).rules, 0);
    const engine = new AlertEngine({
      store: () => store,
      timeZone: 'UTC',
      webhook: false,
      log: pino({ level: 'silent' }),
    });
    if (engine.rules().length !== RULES) throw new Error(`expected ${RULES} enabled rules`);
    return engine;
  };
  const fired = (db: ReturnType<typeof openDatabase>) =>
    db.prepare('SELECT count(DISTINCT event_seq) FROM audit_alerts').pluck().get() as number;
  const without: number[] = [];
  const withRules: number[] = [];
  let last = { alerts: 0, matched: 0 };
  try {
    for (let round = 0; round < 3; round++) {
      const r = ingestRound(records, round, withSigma, fired);
      without.push(r.plainMs);
      withRules.push(r.ruledMs);
      last = r;
    }
  } finally {
    rulesDir.cleanup();
  }
  const rate = (ms: number[]) => INGEST_ROWS / (Math.min(...ms) / 1000);
  return [
    compare(
      `audit ingest with ${RULES} Sigma rules: 100k records, batches of 1000`,
      { label: 'ingest, no rules', value: rate(without), unit: 'events/s' },
      { label: `ingest + ${RULES} Sigma rules evaluated`, value: rate(withRules), unit: 'events/s' },
      { atLeast: 0.8, text: '≥ 80% of ingest events/s without rules' },
      `${last.alerts} alerts fired on ${last.matched} events (of ${INGEST_ROWS}); pages taken in turns, best of 3 rounds`,
    ),
  ];
}
