/**
 * Records of the three upstream shapes carrying pivot keys (issue 29), for the timeline tests:
 * a Graph directoryAudit, a Graph signIn-like record on the directory source, and Office 365
 * Management Activity API records (Exchange mailbox, SharePoint, Teams).
 */
import { normalizeRecord } from '../../../plugins/audit/normalize.js';
import type { SourceName } from '../../../plugins/audit/sources.js';
import type { AuditRepositories } from '../../../plugins/audit/store/audit-store.js';

export const DAY = 86_400_000;

export interface Pivoted {
  source: SourceName;
  record: Record<string, unknown>;
}

let n = 0;

/** A Graph directoryAudit: `correlationId`, `initiatedBy.user.ipAddress`. */
export function directoryAudit(o: {
  at: number;
  actor: string;
  operation?: string;
  result?: string;
  ip?: string;
  correlationId?: string;
  target?: string;
}): Pivoted {
  return {
    source: 'directory',
    record: {
      id: `dir-${++n}-${o.at}`,
      activityDateTime: new Date(o.at).toISOString(),
      activityDisplayName: o.operation ?? 'Update user',
      result: o.result ?? 'success',
      ...(o.correlationId ? { correlationId: o.correlationId } : {}),
      initiatedBy: { user: { userPrincipalName: o.actor, ...(o.ip ? { ipAddress: o.ip } : {}) } },
      targetResources: [{ userPrincipalName: o.target ?? 'bob@contoso.com' }],
    },
  };
}

/** A Graph signIn-shaped record: `ipAddress` and `correlationId` at the top. */
export function signIn(o: { at: number; actor: string; ip: string; correlationId: string }): Pivoted {
  return {
    source: 'directory',
    record: {
      id: `signin-${++n}-${o.at}`,
      activityDateTime: new Date(o.at).toISOString(),
      activityDisplayName: 'Sign-in activity',
      result: 'success',
      ipAddress: o.ip,
      correlationId: o.correlationId,
      initiatedBy: { user: { userPrincipalName: o.actor } },
    },
  };
}

/** A Management Activity API record; `extra` adds ClientIP, SessionId, AppAccessContext… */
export function managementRecord(o: {
  at: number;
  actor: string;
  workload?: string;
  source?: SourceName;
  operation?: string;
  result?: string;
  target?: string;
  extra?: Record<string, unknown>;
}): Pivoted {
  return {
    source: o.source ?? 'exchange',
    record: {
      Id: `mgmt-${++n}-${o.at}`,
      CreationTime: new Date(o.at).toISOString().slice(0, 19),
      Operation: o.operation ?? 'MailItemsAccessed',
      ResultStatus: o.result ?? 'Succeeded',
      UserId: o.actor,
      Workload: o.workload ?? 'Exchange',
      ObjectId: o.target ?? 'mailbox',
      ...o.extra,
    },
  };
}

/** Stores the records through the real normaliser and writer, as the collector would. */
export function store(repos: AuditRepositories, records: readonly Pivoted[]): void {
  repos.writer.writeNow(
    records.map(({ source, record }) => {
      const outcome = normalizeRecord(source, record, Number.MAX_SAFE_INTEGER);
      if (!outcome.ok) throw new Error(outcome.reason);
      return outcome.event;
    }),
  );
}
