/**
 * Upstream records → the stored event (issue 6 "Storage"): `timestamp` (ms UTC), `service`,
 * `operation`, `result` (success | failure | unknown, with the raw value kept), `actor`,
 * `target`, the source-specific dedupe key and the raw record. A record that cannot be placed
 * (no usable timestamp, not an object) is refused with a reason, counted in source health, and
 * never stops the rest of the page or blob.
 */
import { createHash } from 'node:crypto';
import type { SourceName } from './sources.js';
import type { NormalizedResult } from './store/dictionaries.js';

/** The tenant of a single-tenant hub, and of every event stored before tenants existed. */
export const DEFAULT_TENANT = 'default';

export interface NormalizedEvent {
  /** The Microsoft 365 tenant it was collected from, by the operator's short name (AUDIT_TENANTS). */
  tenant: string;
  source: SourceName;
  /** The source's own id of the record: the dedupe key within the source. */
  sourceKey: string;
  timestamp: number;
  service: string;
  operation: string;
  resultRaw: string;
  result: NormalizedResult;
  actor: string;
  target: string;
  /** Issue 29, pivots: the client's IP address, the correlation id and the session id, when the record carries them. */
  clientIp?: string;
  correlationId?: string;
  sessionId?: string;
  /** The upstream record as JSON text. */
  raw: string;
  /**
   * The same record as parsed, handed to the alert engine in this process so Sigma rules read it
   * without parsing `raw` again. Never stored or sent: `raw` is.
   */
  record?: unknown;
}

/** The pivot keys a record carries (issue 29): client IP, correlation id, session id. */
export interface PivotFields {
  clientIp?: string | undefined;
  correlationId?: string | undefined;
  sessionId?: string | undefined;
}

export type NormalizeOutcome = { ok: true; event: NormalizedEvent } | { ok: false; reason: string };

type Json = Record<string, unknown>;

const LIMITS = { service: 64, operation: 256, actor: 512, target: 1024, key: 128 } as const;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):(\d{2}))?$/i;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const EARLIEST = Date.UTC(2000, 0, 1);

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(value: unknown): string | undefined {
  if (typeof value === 'string') {
    const t = value.trim();
    return t ? t : undefined;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function clip(value: string, max: number): string {
  return value.length > max ? value.slice(0, max) : value;
}

/**
 * ISO 8601 → ms UTC. A time without an offset is UTC: the Management API's `CreationTime` is
 * UTC without a designator (JavaScript would read it as local time).
 */
export function parseUpstreamTime(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = ISO.exec(value);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6] ?? 0);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  if (days === undefined || day < 1 || day > days || hour > 23 || minute > 59 || second > 59)
    return undefined;
  const millis = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  const offset = m[9] ? (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) * 60_000 : 0;
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, millis) - offset;
  // A year-2000-or-later event up to a day in the future (clock skew); anything else is garbage.
  if (ms < EARLIEST || ms > now + 86_400_000) return undefined;
  return ms;
}

/** success / succeeded / true → success; failure / failed / timeout / partial / false → failure. */
export function normalizeResult(raw: string | undefined): NormalizedResult {
  if (!raw) return 'unknown';
  const v = raw.trim().toLowerCase();
  if (v === 'success' || v === 'succeeded' || v === 'true' || v === 'ok') return 'success';
  if (
    v === 'failure' ||
    v === 'failed' ||
    v === 'fail' ||
    v === 'false' ||
    v === 'timeout' ||
    v === 'partiallysucceeded' ||
    v === 'partial'
  ) {
    return 'failure';
  }
  return 'unknown';
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The dedupe key: the record's id, trimmed; GUIDs lower-cased (they compare case-insensitively).
 * A record without an id is keyed by a hash of its content, so the same record delivered twice
 * is still stored once.
 */
export function canonicalKey(id: string | undefined, record: unknown): string {
  if (id) return GUID.test(id) ? id.toLowerCase() : id;
  return `sha256:${createHash('sha256').update(stableStringify(record)).digest('hex')}`;
}

function initiatorName(initiatedBy: unknown): string {
  if (!isObject(initiatedBy)) return '';
  const user = initiatedBy.user;
  if (isObject(user)) {
    const name = str(user.userPrincipalName) ?? str(user.displayName) ?? str(user.id);
    if (name) return name;
  }
  const app = initiatedBy.app;
  if (isObject(app)) {
    return (
      str(app.displayName) ??
      str(app.servicePrincipalName) ??
      str(app.appId) ??
      str(app.servicePrincipalId) ??
      ''
    );
  }
  return '';
}

function targetNames(list: unknown, pick: (t: Json) => string | undefined): string {
  if (!Array.isArray(list)) return '';
  return list
    .filter(isObject)
    .map(pick)
    .filter((n): n is string => Boolean(n))
    .slice(0, 5)
    .join('; ');
}

/** Graph directoryAudit (https://learn.microsoft.com/graph/api/resources/directoryaudit). */
function fromDirectoryAudit(r: Json) {
  return {
    id: str(r.id),
    time: r.activityDateTime,
    service: 'directory',
    operation: str(r.activityDisplayName) ?? str(r.operationType) ?? '',
    result: str(r.result),
    actor: initiatorName(r.initiatedBy),
    target: targetNames(
      r.targetResources,
      (t) => str(t.userPrincipalName) ?? str(t.displayName) ?? str(t.id),
    ),
  };
}

/**
 * Intune auditEvent (https://learn.microsoft.com/graph/api/resources/intune-auditing-auditevent).
 * An actor whose `auditActorType` is `Application` is named by the application (issue 6).
 */
function fromDeviceManagementEvent(r: Json) {
  const actor = isObject(r.actor) ? r.actor : {};
  const isApp = str(actor.auditActorType)?.toLowerCase() === 'application';
  const name = isApp
    ? (str(actor.applicationDisplayName) ?? str(actor.servicePrincipalName) ?? str(actor.applicationId))
    : (str(actor.userPrincipalName) ?? str(actor.userId) ?? str(actor.applicationDisplayName));
  return {
    id: str(r.id),
    time: r.activityDateTime,
    service: 'device_management',
    operation: str(r.activity) ?? str(r.displayName) ?? str(r.activityType) ?? '',
    result: str(r.activityResult),
    actor: name ?? '',
    target: targetNames(r.resources, (t) => str(t.displayName) ?? str(t.resourceId)),
  };
}

const WORKLOAD_SERVICES: Record<string, string> = {
  exchange: 'exchange',
  sharepoint: 'sharepoint',
  onedrive: 'onedrive',
  microsoftteams: 'teams',
};

/** Management Activity API common schema: CreationTime, Id, Operation, ResultStatus, UserId, Workload, ObjectId. */
const workloadServices = new Map<string, string>();

/** `Workload` → service name: known workloads by name, others lower-case with `_` (memoised). */
function serviceOfWorkload(workload: string): string {
  let service = workloadServices.get(workload);
  if (service === undefined) {
    const key = workload.toLowerCase().replace(/[^a-z0-9]+/g, '_');
    service = WORKLOAD_SERVICES[key] ?? key;
    if (workloadServices.size < 1000) workloadServices.set(workload, service);
  }
  return service;
}

function fromManagementRecord(r: Json, fallbackService: string) {
  const workload = str(r.Workload);
  return {
    id: str(r.Id),
    time: r.CreationTime,
    service: workload ? serviceOfWorkload(workload) : fallbackService,
    operation: str(r.Operation) ?? '',
    result: str(r.ResultStatus),
    actor: str(r.UserId) ?? str(r.UserKey) ?? '',
    target: str(r.ObjectId) ?? str(r.SiteUrl) ?? '',
  };
}

/**
 * An IP address as a pivot compares it: without the port or brackets the Office 365 records
 * sometimes add (`203.0.113.9:51234`, `[2001:db8::1]:443`), lower-cased (IPv6); undefined when
 * empty. The search's `client_ip` filter goes through the same function.
 */
export function normalizeIp(value: string | undefined): string | undefined {
  if (!value) return undefined;
  let ip = value.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(ip);
  if (bracketed) ip = bracketed[1]!;
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(ip)) ip = ip.slice(0, ip.lastIndexOf(':'));
  return ip ? clip(ip, LIMITS.key) : undefined;
}

/** A correlation or session id; GUIDs lower-cased (they compare case-insensitively). */
const key = (value: unknown): string | undefined => {
  const v = str(value);
  return v ? clip(GUID.test(v) ? v.toLowerCase() : v, LIMITS.key) : undefined;
};

/** AppAccessContext is documented as a collection and sent as an object: either. */
const appAccessContext = (value: unknown): Json =>
  (Array.isArray(value) ? value.find(isObject) : isObject(value) ? value : undefined) ?? {};

/**
 * The pivot keys of a record (issue 29). Graph directoryAudit: `correlationId` and
 * `initiatedBy.user.ipAddress`; Graph signIn: `ipAddress`, `correlationId`; Intune auditEvent:
 * `correlationId` and `actor.ipAddress`; Management Activity API: `ClientIP` (common schema),
 * `ClientIPAddress` (Exchange mailbox, SharePoint) or `ActorIpAddress` (Entra), `CorrelationId`
 * or `AppAccessContext.CorrelationId`, `SessionId` (Exchange mailbox) or
 * `AppAccessContext.AADSessionId`.
 */
export function pivotFields(source: SourceName, record: unknown): PivotFields {
  if (!isObject(record)) return {};
  if (source === 'directory') {
    const user =
      isObject(record.initiatedBy) && isObject(record.initiatedBy.user) ? record.initiatedBy.user : {};
    return {
      clientIp: normalizeIp(str(user.ipAddress) ?? str(record.ipAddress)),
      correlationId: key(record.correlationId),
    };
  }
  if (source === 'device_management') {
    const actor = isObject(record.actor) ? record.actor : {};
    return { clientIp: normalizeIp(str(actor.ipAddress)), correlationId: key(record.correlationId) };
  }
  const context = appAccessContext(record.AppAccessContext);
  return {
    clientIp: normalizeIp(str(record.ClientIP) ?? str(record.ClientIPAddress) ?? str(record.ActorIpAddress)),
    correlationId: key(record.CorrelationId) ?? key(context.CorrelationId),
    sessionId: key(record.SessionId) ?? key(context.AADSessionId),
  };
}

export function normalizeRecord(
  source: SourceName,
  record: unknown,
  now = Date.now(),
  tenant = DEFAULT_TENANT,
): NormalizeOutcome {
  if (!isObject(record)) return { ok: false, reason: 'record is not a JSON object' };
  const fields =
    source === 'directory'
      ? fromDirectoryAudit(record)
      : source === 'device_management'
        ? fromDeviceManagementEvent(record)
        : fromManagementRecord(record, source);
  const timestamp = parseUpstreamTime(fields.time, now);
  if (timestamp === undefined) return { ok: false, reason: 'record has no valid timestamp' };
  const resultRaw = fields.result ?? '';
  const pivots = pivotFields(source, record);
  return {
    ok: true,
    event: {
      tenant,
      source,
      sourceKey: canonicalKey(fields.id, record),
      timestamp,
      service: clip(fields.service, LIMITS.service),
      operation: clip(fields.operation, LIMITS.operation),
      resultRaw: clip(resultRaw, LIMITS.operation),
      result: normalizeResult(resultRaw),
      actor: clip(fields.actor, LIMITS.actor),
      target: clip(fields.target, LIMITS.target),
      ...(pivots.clientIp ? { clientIp: pivots.clientIp } : {}),
      ...(pivots.correlationId ? { correlationId: pivots.correlationId } : {}),
      ...(pivots.sessionId ? { sessionId: pivots.sessionId } : {}),
      raw: JSON.stringify(record),
      record,
    },
  };
}
