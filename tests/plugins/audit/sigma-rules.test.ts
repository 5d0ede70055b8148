/**
 * Sigma rules (SIGMA_RULES_DIR) through the real store and alert engine: rule files written by
 * the test are loaded and installed as alert rules, upstream records are normalised and stored
 * by the writer, the engine evaluates them on the stored-events hook, and the alerts are read
 * back from the store. Each record has its own user, so "which users were alerted" is "which
 * records matched". Covers every supported modifier and condition form, the field table, the
 * log sources, and the rules that must be refused (each with its reason, nothing loaded).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AlertRepository } from '../../../plugins/audit/alerts/alert-repository.js';
import { AlertEngine } from '../../../plugins/audit/alerts/engine.js';
import { normalizeRecord } from '../../../plugins/audit/normalize.js';
import { AuditConfigError } from '../../../plugins/audit/settings.js';
import { compileSigmaRule } from '../../../plugins/audit/sigma/compile.js';
import { installSigmaRules } from '../../../plugins/audit/sigma/install.js';
import { loadSigmaRules } from '../../../plugins/audit/sigma/load.js';
import type { SourceName } from '../../../plugins/audit/sources.js';
import { openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { directoryAudit, managementRecord } from '../../fakes/microsoft/fixtures.js';

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-sigma-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

interface Bench {
  db: Database;
  alerts: AlertRepository;
  install(dir: string): ReturnType<typeof installSigmaRules> & ReturnType<typeof loadSigmaRules>;
  /** Stores the records; returns the alerted users (the alert keys), by rule name. */
  store(records: Array<{ source: SourceName; record: Record<string, unknown> }>): Record<string, string[]>;
}

function bench(): Bench {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-sigma-db-'));
  const db = openDatabase(join(dir, 'hub.db'));
  cleanup.push(() => {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  });
  const repos = openAuditRepositories(db);
  const alerts = AlertRepository.on(db);
  const engine = new AlertEngine({
    store: () => alerts,
    timeZone: 'UTC',
    webhook: false,
    log: pino({ level: 'silent' }),
  });
  repos.writer.onStored(engine.onStored);
  return {
    db,
    alerts,
    install(rulesDir) {
      const load = loadSigmaRules(rulesDir);
      const installed = installSigmaRules(db, alerts, load.rules);
      return { ...load, ...installed, refused: [...load.refused, ...installed.refused] };
    },
    store(records) {
      const events = records.map(({ source, record }) => {
        const out = normalizeRecord(source, record);
        if (!out.ok) throw new Error(out.reason);
        return out.event;
      });
      const before = engine.evaluated;
      repos.writer.writeNow(events);
      expect(engine.evaluated - before).toBe(events.length);
      const byRule: Record<string, string[]> = {};
      for (const a of alerts.page({}, 500).rows) {
        byRule[a.rule_name] = [...(byRule[a.rule_name] ?? []), a.alert_key];
      }
      for (const keys of Object.values(byRule)) keys.sort();
      return byRule;
    },
  };
}

const AT = Date.now() - 3_600_000;
let n = 0;
/** An Exchange (or other content type's) record by `user`, with the given fields over the defaults. */
const m365 = (user: string, fields: Record<string, unknown> = {}, contentType = 'Audit.Exchange') => ({
  source: (contentType === 'Audit.SharePoint'
    ? 'sharepoint'
    : contentType === 'Audit.General'
      ? 'teams'
      : 'exchange') as SourceName,
  record: { ...managementRecord(contentType, ++n, AT + n, { user }), ...fields },
});
const entra = (user: string, activity: string, result = 'success') => ({
  source: 'directory' as SourceName,
  record: directoryAudit(++n, AT + n, { user, activity, result }),
});

const rule = (title: string, detection: string, extra = '') => `title: ${title}
id: ${`00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`}
status: test
level: high
${extra}logsource:
  product: m365
  service: exchange
detection:
${detection}
`;

describe('Sigma field matches (m365 / exchange)', () => {
  it('matches plain values case-insensitively, lists as any of, maps as all of, with * and ? wildcards', async () => {
    const b = bench();
    const loaded = b.install(
      folder({
        'plain.yml': rule(
          'Inbox rule',
          `  selection:
    Operation: new-inboxrule
    Workload: [Exchange, SharePoint]
  condition: selection`,
        ),
        'wild.yml': rule(
          'Wildcards',
          `  selection:
    ObjectId: 'mail*box?\\*'
  condition: selection`,
        ),
      }),
    );
    expect(loaded.refused).toEqual([]);
    const got = b.store([
      m365('a@x', { Operation: 'New-InboxRule' }),
      m365('b@x', { Operation: 'New-InboxRule', Workload: 'MicrosoftTeams' }),
      m365('c@x', { Operation: 'Set-InboxRule' }),
      m365('d@x', { ObjectId: 'MAILxxBOX1*' }),
      m365('e@x', { ObjectId: 'mailbox1' }),
      m365('f@x', { ObjectId: 'mailbox12*' }),
    ]);
    expect(got['Sigma: Inbox rule']).toEqual(['a@x']);
    expect(got['Sigma: Wildcards']).toEqual(['d@x']);
  });

  it('applies contains, startswith, endswith, all, cased, base64, re (i), cidr, exists, null, gt/gte/lt/lte', async () => {
    const b = bench();
    const loaded = b.install(
      folder({
        'contains.yml': rule('contains', `  s:\n    Operation|contains: inbox\n  condition: s`),
        'starts.yml': rule('startswith', `  s:\n    Operation|startswith: 'Set-'\n  condition: s`),
        'ends.yml': rule('endswith', `  s:\n    Operation|endswith: 'Rule'\n  condition: s`),
        'all.yml': rule('all', `  s:\n    Operation|contains|all: [new, rule]\n  condition: s`),
        'cased.yml': rule('cased', `  s:\n    Operation|cased: 'Remove-MailboxPermission'\n  condition: s`),
        'base64.yml': rule('base64', `  s:\n    ObjectId|base64: 'secret'\n  condition: s`),
        're.yml': rule('re', `  s:\n    UserId|re: '^ops[0-9]+@'\n  condition: s`),
        'rei.yml': rule('re i', `  s:\n    UserId|re|i: '^ADMIN[0-9]@'\n  condition: s`),
        'cidr.yml': rule('cidr', `  s:\n    ClientIP|cidr: ['10.0.0.0/8', '2001:db8::/32']\n  condition: s`),
        'exists.yml': rule('exists', `  s:\n    ResultStatus|exists: false\n  condition: s`),
        'null.yml': rule(
          'null value',
          `  s:\n    MailboxOwnerUPN: null\n    Operation: Nulltest\n  condition: s`,
        ),
        'gte.yml': rule('gte', `  s:\n    RecordType|gte: 60\n  condition: s`),
        'lt.yml': rule('lt', `  s:\n    RecordType|lt: 3\n  condition: s`),
      }),
    );
    expect(loaded.refused).toEqual([]);
    expect(loaded.installed).toHaveLength(13);
    const got = b.store([
      m365('inbox@x', { Operation: 'New-InboxRule' }),
      m365('set@x', { Operation: 'Set-Mailbox' }),
      m365('cased@x', { Operation: 'Remove-MailboxPermission' }),
      m365('uncased@x', { Operation: 'remove-mailboxpermission' }),
      m365('b64@x', { ObjectId: Buffer.from('secret').toString('base64') }),
      m365('ops42@x', {}),
      m365('opsx@x', {}),
      m365('admin7@x', {}),
      m365('v4@x', { ClientIP: '10.1.2.3' }),
      m365('v6@x', { ClientIP: '2001:db8::1' }),
      m365('outside@x', { ClientIP: '11.0.0.1' }),
      m365('noresult@x', { ResultStatus: undefined }),
      m365('nullowner@x', { Operation: 'Nulltest', MailboxOwnerUPN: null }),
      m365('hasowner@x', { Operation: 'Nulltest', MailboxOwnerUPN: 'o@x' }),
      m365('rt60@x', { RecordType: 60 }),
      m365('rt2@x', { RecordType: '2' }),
    ]);
    expect(got['Sigma: contains']).toEqual(['inbox@x']);
    expect(got['Sigma: startswith']).toEqual(['set@x']);
    expect(got['Sigma: endswith']).toEqual(['inbox@x']);
    expect(got['Sigma: all']).toEqual(['inbox@x']);
    expect(got['Sigma: cased']).toEqual(['cased@x']);
    expect(got['Sigma: base64']).toEqual(['b64@x']);
    expect(got['Sigma: re']).toEqual(['ops42@x']);
    expect(got['Sigma: re i']).toEqual(['admin7@x']);
    expect(got['Sigma: cidr']).toEqual(['v4@x', 'v6@x']);
    // The fixture leaves ResultStatus out with result: null; JSON drops undefined.
    expect(got['Sigma: exists']).toEqual(['noresult@x']);
    expect(got['Sigma: null value']).toEqual(['nullowner@x']);
    expect(got['Sigma: gte']).toEqual(['rt60@x']);
    expect(got['Sigma: lt']).toEqual(['rt2@x']);
  });

  it('reads keyword lists anywhere in the record, and maps eventSource/eventName/status', async () => {
    const b = bench();
    b.install(
      folder({
        'kw.yml': rule(
          'keywords',
          `  keywords:\n    - 'evil.example'\n    - 'forward*external'\n  condition: keywords`,
        ),
        'names.yml': rule(
          'sigmahq names',
          `  s:\n    eventSource: Exchange\n    eventName: Set-Mailbox\n    status: Succeeded\n  condition: s`,
        ),
      }),
    );
    const got = b.store([
      m365('kw1@x', { Parameters: [{ Name: 'ForwardingSmtpAddress', Value: 'smtp:boss@EVIL.example' }] }),
      m365('kw2@x', { Operation: 'forward to external' }),
      m365('kw3@x', {}),
      m365('names@x', { Operation: 'Set-Mailbox' }),
      m365('failed@x', { Operation: 'Set-Mailbox', ResultStatus: 'Failed' }),
    ]);
    expect(got['Sigma: keywords']).toEqual(['kw1@x', 'kw2@x']);
    expect(got['Sigma: sigmahq names']).toEqual(['names@x']);
  });
});

describe('Sigma conditions', () => {
  it('supports and, or, not, parentheses, lists of maps, 1 of / all of a pattern, 1 of them, all of them', async () => {
    const b = bench();
    const sels = `  sel_a:\n    Operation|contains: alpha\n  sel_b:\n    Operation|contains: beta\n  _filter:\n    UserId|startswith: quiet\n`;
    b.install(
      folder({
        'and-not.yml': rule('and not', `${sels}  condition: sel_a and not _filter`),
        'parens.yml': rule('parens', `${sels}  condition: (sel_a or sel_b) and not _filter`),
        'one-of.yml': rule('one of', `${sels}  condition: 1 of sel_* and not _filter`),
        'all-of.yml': rule('all of', `${sels}  condition: all of sel_*`),
        'one-of-them.yml': rule('one of them', `${sels}  condition: 1 of them`),
        'all-of-them.yml': rule('all of them', `${sels}  condition: all of them`),
        'maps.yml': rule(
          'list of maps',
          `  s:\n    - Operation: alpha\n    - Operation: beta\n      ClientIP: 1.2.3.4\n  condition: s`,
        ),
      }),
    );
    const got = b.store([
      m365('a@x', { Operation: 'alpha' }),
      m365('b@x', { Operation: 'beta', ClientIP: '1.2.3.4' }),
      m365('ab@x', { Operation: 'alpha beta' }),
      m365('quietab@x', { Operation: 'alpha beta' }),
      m365('quieta@x', { Operation: 'alpha' }),
      m365('beta5@x', { Operation: 'beta', ClientIP: '5.5.5.5' }),
      m365('none@x', { Operation: 'gamma' }),
    ]);
    expect(got['Sigma: and not']).toEqual(['a@x', 'ab@x']);
    expect(got['Sigma: parens']).toEqual(['a@x', 'ab@x', 'b@x', 'beta5@x']);
    expect(got['Sigma: one of']).toEqual(['a@x', 'ab@x', 'b@x', 'beta5@x']);
    expect(got['Sigma: all of']).toEqual(['ab@x', 'quietab@x']);
    // `them` leaves out selections whose names start with `_`.
    expect(got['Sigma: one of them']).toEqual(['a@x', 'ab@x', 'b@x', 'beta5@x', 'quieta@x', 'quietab@x']);
    expect(got['Sigma: all of them']).toEqual(['ab@x', 'quietab@x']);
    expect(got['Sigma: list of maps']).toEqual(['a@x', 'b@x', 'quieta@x']);
  });
});

describe('Sigma log sources and the field table', () => {
  it('m365/exchange sees Exchange only, m365/audit every unified-audit source, azure/auditlogs the directory', async () => {
    const b = bench();
    const loaded = b.install(
      folder({
        'ex.yml': rule('exchange only', `  s:\n    UserId|startswith: all\n  condition: s`),
        'audit.yml': `title: any workload\nlevel: low\nlogsource:\n  product: m365\n  service: audit\ndetection:\n  s:\n    UserId|startswith: all\n  condition: s\n`,
        'azure.yml': `title: role to a user
level: critical
logsource:
  product: azure
  service: auditlogs
detection:
  grant:
    ActivityDisplayName: Add member to role
    Category: UserManagement
    LoggedByService: Core Directory
  ok:
    Result: success
  to_contoso:
    targetResources.userPrincipalName|endswith: '@contoso.com'
  by_admin:
    initiatedBy.user.userPrincipalName|contains: admin
  condition: all of them
`,
      }),
    );
    expect(loaded.refused).toEqual([]);
    const got = b.store([
      m365('all-ex@x'),
      m365('all-sp@x', {}, 'Audit.SharePoint'),
      m365('all-teams@x', {}, 'Audit.General'),
      entra('admin@contoso.com', 'Add member to role'),
      entra('admin2@contoso.com', 'Add member to role', 'failure'),
      entra('bob@contoso.com', 'Add member to role'),
      entra('alladmin@contoso.com', 'Add member to group'),
    ]);
    expect(got['Sigma: exchange only']).toEqual(['all-ex@x']);
    expect(got['Sigma: any workload']).toEqual(['all-ex@x', 'all-sp@x', 'all-teams@x']);
    expect(got['Sigma: role to a user']).toEqual(['admin@contoso.com']);
    // Sigma's level is the alert's severity.
    const severity = (name: string) =>
      b.alerts.page({}, 100).rows.find((a) => a.rule_name === name)?.severity;
    expect(severity('Sigma: role to a user')).toBe('critical');
    expect(severity('Sigma: any workload')).toBe('low');
    expect(severity('Sigma: exchange only')).toBe('high');
  });
});

describe('refused Sigma rules', () => {
  it('reports each by file, title, id and reason, and loads nothing of it', async () => {
    const b = bench();
    const ok = `  s:\n    Operation: x\n  condition: s`;
    const loaded = b.install(
      folder({
        'good.yml': rule('good', ok),
        'field.yml': rule('unknown field', `  s:\n    CommandLine|contains: x\n  condition: s`),
        'proto.yml': rule('inherited name', `  s:\n    constructor: x\n  condition: s`),
        'mod.yml': rule('windash', `  s:\n    Operation|windash: '-x'\n  condition: s`),
        'agg.yml': rule('aggregation', `${ok} | count() by UserId > 5`),
        'timeframe.yml': rule('timeframe', `  timeframe: 5m\n${ok}`),
        'selection.yml': rule('missing selection', `  s:\n    Operation: x\n  condition: s and t`),
        'regex.yml': rule('nested', `  s:\n    Operation|re: '(a+)+$'\n  condition: s`),
        'signin.yml': `title: sign-ins\nlogsource:\n  product: azure\n  service: signinlogs\ndetection:\n${ok}\n`,
        'windows.yml': `title: windows\nlogsource:\n  product: windows\n  category: process_creation\ndetection:\n${ok}\n`,
        'level.yml': `title: bad level\nlevel: urgent\nlogsource:\n  product: m365\n  service: audit\ndetection:\n${ok}\n`,
        'sub/broken.yaml': 'title: broken\ndetection:\n  s: [unclosed\n',
        'dup.yml': `title: duplicate\nid: ${'00000000-0000-4000-8000-000000000001'}\nlogsource:\n  product: m365\n  service: audit\ndetection:\n${ok}\n`,
        'dup0.yml': `title: first\nid: ${'00000000-0000-4000-8000-000000000001'}\nlogsource:\n  product: m365\n  service: audit\ndetection:\n${ok}\n`,
      }),
    );
    const reasons = Object.fromEntries(loaded.refused.map((r) => [r.file, r]));
    expect(Object.keys(reasons).sort()).toEqual(
      [
        'agg.yml',
        'dup0.yml',
        'field.yml',
        'level.yml',
        'mod.yml',
        'proto.yml',
        'regex.yml',
        'selection.yml',
        'signin.yml',
        'sub/broken.yaml',
        'timeframe.yml',
        'windows.yml',
      ].sort(),
    );
    expect(reasons['field.yml']).toMatchObject({
      title: 'unknown field',
      reason: expect.stringMatching(/field "CommandLine"/),
    });
    expect(reasons['field.yml']!.id).toMatch(/^00000000-/);
    expect(reasons['proto.yml']!.reason).toMatch(/field "constructor" is not one we can map/);
    expect(reasons['mod.yml']!.reason).toMatch(/modifier "windash" is not supported/);
    expect(reasons['agg.yml']!.reason).toMatch(/aggregations/);
    expect(reasons['timeframe.yml']!.reason).toMatch(/timeframe/);
    expect(reasons['selection.yml']!.reason).toMatch(/unknown selection "t"/);
    expect(reasons['regex.yml']!.reason).toMatch(/nests quantifiers/);
    expect(reasons['signin.yml']!.reason).toMatch(/sign-in logs are not collected/);
    expect(reasons['windows.yml']!.reason).toMatch(/not collected/);
    expect(reasons['level.yml']!.reason).toMatch(/level "urgent"/);
    expect(reasons['sub/broken.yaml']!.reason).toMatch(/^not valid YAML/);
    expect(reasons['dup0.yml']!.reason).toMatch(/dup\.yml has a rule with the same id/);
    // Only the good rule and the first (in file order) of the two with one id are rules now.
    expect(
      b.alerts
        .rules()
        .map((r) => r.name)
        .sort(),
    ).toEqual(['Sigma: duplicate', 'Sigma: good']);
  });

  it('stops the start with one line naming SIGMA_RULES_DIR when the folder is missing or a file', () => {
    expect(() => loadSigmaRules('/nonexistent/sigma')).toThrow(AuditConfigError);
    expect(() => loadSigmaRules('/nonexistent/sigma')).toThrow(
      /^SIGMA_RULES_DIR: \/nonexistent\/sigma does not exist; point it at a folder/,
    );
    const dir = folder({ 'a.yml': 'title: a' });
    expect(() => loadSigmaRules(join(dir, 'a.yml'))).toThrow(/^SIGMA_RULES_DIR: .* is not a folder/);
  });
});

describe('Sigma rules across restarts', () => {
  it('keep their rule id, follow an edited file, and lose their row when the file goes (alerts stay)', async () => {
    const b = bench();
    const first = b.install(folder({ 'r.yml': rule('kept', `  s:\n    Operation: Hit\n  condition: s`) }));
    const id = first.installed[0]!.ruleId;
    b.store([m365('one@x', { Operation: 'Hit' })]);
    const edited = folder({
      'r.yml': rule('kept', `  s:\n    Operation: Other\n  condition: s`).replace(
        /^id: .*$/m,
        `id: ${first.installed[0]!.id}`,
      ),
    });
    expect(b.install(edited).installed[0]!.ruleId).toBe(id);
    const got = b.store([m365('two@x', { Operation: 'Hit' }), m365('three@x', { Operation: 'Other' })]);
    expect(got['Sigma: kept']).toEqual(['one@x', 'three@x']);
    b.install(folder({}));
    expect(b.alerts.rules()).toEqual([]);
    expect(b.alerts.page({}, 10).rows).toHaveLength(2);
  });

  it('a Sigma rule row whose file was not loaded this run never matches by its empty condition', () => {
    const b = bench();
    b.install(folder({ 'r.yml': rule('orphan', `  s:\n    Operation: Hit\n  condition: s`) }));
    b.alerts.fileRules.clear();
    b.alerts.revision++;
    const got = b.store([m365('any@x', { Operation: 'Anything' }), m365('hit@x', { Operation: 'Hit' })]);
    expect(got).toEqual({});
  });
});

describe('Sigma string matching, property-style', () => {
  // A small alphabet makes overlaps and near-misses common; a seeded generator keeps runs alike.
  let seed = 29;
  const rand = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const word = (alphabet: string, max: number) =>
    Array.from(
      { length: Math.floor(rand() * max) },
      () => alphabet[Math.floor(rand() * alphabet.length)],
    ).join('');
  const matcher = (modifier: string, value: string) =>
    compileSigmaRule({
      title: 't',
      logsource: { product: 'm365', service: 'audit' },
      detection: { s: { [`Operation${modifier}`]: value }, condition: 's' },
    });
  /** Sigma wildcards as a reference regex: `*` any run, `?` one character, case-insensitive. */
  const reference = (pattern: string) =>
    new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\-]/g, '\\$&')
        .replace(/\*/g, '[\\s\\S]*')
        .replace(/\?/g, '[\\s\\S]')}$`,
      'i',
    );

  it('contains, startswith and endswith agree with includes/startsWith/endsWith, ignoring case', () => {
    for (let i = 0; i < 500; i++) {
      const text = word('aAbB-.', 12);
      const needle = word('abAB.-', 4) || 'a';
      const lower = text.toLowerCase();
      const n = needle.toLowerCase();
      expect(matcher('|contains', needle).matches({ Operation: text })).toBe(lower.includes(n));
      expect(matcher('|startswith', needle).matches({ Operation: text })).toBe(lower.startsWith(n));
      expect(matcher('|endswith', needle).matches({ Operation: text })).toBe(lower.endsWith(n));
    }
  });

  it('wildcard values agree with a regular-expression reading of * and ?', () => {
    for (let i = 0; i < 500; i++) {
      const text = word('abAB', 10);
      // Half the patterns without `?`: those take the `*`-segments path, the others a RegExp.
      const pattern = word(i % 2 ? 'ab*?' : 'abB*', 8);
      expect(matcher('', pattern).matches({ Operation: text })).toBe(reference(pattern).test(text));
    }
  });
});
