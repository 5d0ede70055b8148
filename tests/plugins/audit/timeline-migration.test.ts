/**
 * Issue 29, audit migration 10 (pivot keys) on a database written by the previous version: the events it holds get
 * their pivot keys from their raw records (all three upstream shapes), so old events pivot too.
 */
import { expect, it } from 'vitest';
import { openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import { KEY_KINDS } from '../../../plugins/audit/timeline/keys.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { atAuditVersion } from './helpers.js';
import { directoryAudit, managementRecord, type Pivoted, signIn } from './timeline-records.js';

const AT = Date.UTC(2025, 4, 1, 12);

it('backfills client IPs, correlation and session ids and targets from stored raw records', () => {
  atAuditVersion(7, (db) => {
    // As version 7 stored them: the event row and its raw record, nothing else.
    const event = db.prepare(
      'INSERT INTO audit_events (source, source_key, ts, service, operation_id, result_id, actor_id, target, ingested_at) VALUES (?, ?, ?, ?, 1, 1, 1, ?, 0)',
    );
    const raw = db.prepare('INSERT INTO audit_event_raw (seq, raw) VALUES (?, ?)');
    const old = (p: Pivoted, ts: number, target: string) => {
      const seq = Number(event.run(p.source, `k${ts}`, ts, p.source, target).lastInsertRowid);
      raw.run(seq, JSON.stringify(p.record));
      return seq;
    };
    const audit = old(
      directoryAudit({ at: AT, actor: 'a', ip: '198.51.100.7', correlationId: 'corr-1' }),
      AT,
      'bob@contoso.com',
    );
    const login = old(
      signIn({ at: AT, actor: 'a', ip: '198.51.100.7', correlationId: 'corr-1' }),
      AT + 1,
      '',
    );
    const mail = old(
      managementRecord({
        at: AT,
        actor: 'a',
        extra: { ClientIPAddress: '[2001:db8::1]:443', AppAccessContext: { AADSessionId: 'aad-1' } },
      }),
      AT + 2,
      'mailbox',
    );
    const file = old(
      managementRecord({
        at: AT,
        actor: 'a',
        source: 'sharepoint',
        extra: { ClientIP: '198.51.100.7:5000', CorrelationId: 'corr-1' },
      }),
      AT + 3,
      'plan.docx',
    );
    // A raw record that is not JSON still migrates (its target is all it can be found by).
    const broken = Number(event.run('exchange', 'broken', AT + 4, 'exchange', 'x').lastInsertRowid);
    raw.run(broken, '{not json');

    migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS);

    const { query } = openAuditRepositories(db);
    const seqs = (kind: keyof typeof KEY_KINDS, value: string) =>
      query.newest({ keys: [[KEY_KINDS[kind], value]] }, undefined, 10).map((r) => r.seq);
    expect(seqs('client_ip', '198.51.100.7')).toEqual([file, login, audit]);
    expect(seqs('client_ip', '2001:db8::1')).toEqual([mail]);
    expect(seqs('correlation_id', 'corr-1')).toEqual([file, login, audit]);
    expect(seqs('session_id', 'aad-1')).toEqual([mail]);
    expect(seqs('target', 'bob@contoso.com')).toEqual([audit]);
    expect(seqs('target', 'x')).toEqual([broken]);
  });
});
