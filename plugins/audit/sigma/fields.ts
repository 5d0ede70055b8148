/**
 * Which Sigma log sources we collect, and the ONE table from Sigma field names to where the value
 * lives in our stored event (README "Sigma detections"). A Sigma rule is matched against the
 * upstream record the store keeps with each event (`raw`): Management Activity API records for
 * `product: m365`, Graph directoryAudit records for `product: azure, service: auditlogs`. A field
 * not in this table is refused at load: a rule never runs with part of its detection ignored.
 */

/** Our collected sources (sources.ts) behind each Sigma log source. */
export type SigmaProduct = 'm365' | 'azure';

const MANAGEMENT_SOURCES = ['exchange', 'sharepoint', 'teams'] as const;

/** `product/service` → the sources whose events the rule sees; `refused` says why we cannot. */
export const LOG_SOURCES: Record<string, { sources: readonly string[] } | { refused: string }> = {
  // SigmaHQ's m365 services are all Management Activity API records (unified audit log).
  'm365/audit': { sources: MANAGEMENT_SOURCES },
  'm365/threat_management': { sources: MANAGEMENT_SOURCES },
  'm365/threat_detection': { sources: MANAGEMENT_SOURCES },
  'm365/exchange': { sources: ['exchange'] },
  'azure/auditlogs': { sources: ['directory'] },
  'azure/signinlogs': { refused: 'Entra sign-in logs are not collected (only directory audits)' },
  'azure/activitylogs': { refused: 'the Azure activity log (resource operations) is not collected' },
  'azure/riskdetection': { refused: 'Entra risk detections are not collected' },
  'azure/pim': { refused: 'PIM alerts are not collected' },
};

/** A path into the raw record; every array on the way is searched (any element matches). */
export type FieldPath = readonly string[];

const p = (dotted: string): FieldPath => dotted.split('.');

/**
 * Sigma field → record path, per product. Management Activity API common-schema fields keep
 * their names; SigmaHQ's `eventSource`/`eventName`/`status` are the record's Workload, Operation
 * and ResultStatus. For Entra directory audits, SigmaHQ writes Log Analytics names (PascalCase,
 * `properties.message` for the activity); Graph, which we collect from, writes camelCase.
 */
export const FIELDS: Record<SigmaProduct, Record<string, FieldPath>> = {
  m365: {
    eventSource: p('Workload'),
    eventName: p('Operation'),
    status: p('ResultStatus'),
    UserPrincipalName: p('UserId'),
    ...Object.fromEntries(
      [
        'Id',
        'RecordType',
        'CreationTime',
        'Operation',
        'OrganizationId',
        'UserType',
        'UserKey',
        'Workload',
        'ResultStatus',
        'ObjectId',
        'UserId',
        'ClientIP',
        'ClientIPAddress',
        'ClientInfoString',
        'MailboxOwnerUPN',
        'LogonType',
        'ExternalAccess',
        'UserAgent',
        'SiteUrl',
        'SourceFileName',
        'SourceFileExtension',
        'SourceRelativeUrl',
        'ItemType',
        'EventSource',
        'ApplicationId',
        'AppId',
      ].map((name) => [name, p(name)]),
    ),
  },
  azure: {
    'properties.message': p('activityDisplayName'),
    ActivityDisplayName: p('activityDisplayName'),
    OperationName: p('activityDisplayName'),
    Category: p('category'),
    Result: p('result'),
    ResultReason: p('resultReason'),
    ResultDescription: p('resultReason'),
    LoggedByService: p('loggedByService'),
    OperationType: p('operationType'),
    CorrelationId: p('correlationId'),
    Id: p('id'),
    'InitiatedBy.user.userPrincipalName': p('initiatedBy.user.userPrincipalName'),
    'initiatedBy.user.userPrincipalName': p('initiatedBy.user.userPrincipalName'),
    'InitiatedBy.user.displayName': p('initiatedBy.user.displayName'),
    'initiatedBy.user.displayName': p('initiatedBy.user.displayName'),
    'InitiatedBy.user.ipAddress': p('initiatedBy.user.ipAddress'),
    'initiatedBy.user.ipAddress': p('initiatedBy.user.ipAddress'),
    'InitiatedBy.app.displayName': p('initiatedBy.app.displayName'),
    'initiatedBy.app.displayName': p('initiatedBy.app.displayName'),
    'InitiatedBy.app.appId': p('initiatedBy.app.appId'),
    'initiatedBy.app.appId': p('initiatedBy.app.appId'),
    'TargetResources.userPrincipalName': p('targetResources.userPrincipalName'),
    'targetResources.userPrincipalName': p('targetResources.userPrincipalName'),
    'TargetResources.displayName': p('targetResources.displayName'),
    'targetResources.displayName': p('targetResources.displayName'),
    'TargetResources.type': p('targetResources.type'),
    'targetResources.type': p('targetResources.type'),
    'TargetResources.modifiedProperties.displayName': p('targetResources.modifiedProperties.displayName'),
    'TargetResources.modifiedProperties.newValue': p('targetResources.modifiedProperties.newValue'),
    'TargetResources.modifiedProperties.oldValue': p('targetResources.modifiedProperties.oldValue'),
  },
};

/**
 * Where each product's records name their operation (the field most Sigma rules select on
 * exactly): the alert engine indexes rules by it (CompiledSigmaRule.operations).
 */
export const OPERATION_FIELD: Record<SigmaProduct, FieldPath> = {
  m365: FIELDS.m365.Operation!,
  azure: FIELDS.azure.ActivityDisplayName!,
};

/** The record path of a Sigma field, or undefined when the table has none. */
export function fieldPath(product: SigmaProduct, field: string): FieldPath | undefined {
  const table = FIELDS[product];
  return Object.hasOwn(table, field) ? table[field] : undefined;
}

/** A leaf value of the record: what a field's values are compared with. */
export type Leaf = string | number | boolean | null;

/**
 * The values at `path` in `record`: arrays are searched element by element. Returns undefined
 * when the field is absent everywhere (Sigma's "does not exist"); an object at the end of the
 * path is not a value (it matches nothing, and `exists` says true).
 */
export function valuesAt(record: unknown, path: FieldPath): { values: Leaf[]; present: boolean } {
  // The usual case, a top-level field of an object holding a value or nothing: no walk.
  if (path.length === 1 && typeof record === 'object' && record !== null && !Array.isArray(record)) {
    const key = path[0]!;
    const v = (record as Record<string, unknown>)[key];
    // An undefined value is absent, as in the record's JSON text.
    if (!Object.hasOwn(record, key) || v === undefined) return { values: [], present: false };
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
      return { values: [v], present: true };
  }
  const values: Leaf[] = [];
  let present = false;
  const walk = (node: unknown, i: number) => {
    if (Array.isArray(node)) {
      // In JSON text an undefined array item is null.
      for (const item of node) walk(item === undefined ? null : item, i);
      return;
    }
    if (node === undefined) return;
    if (i === path.length) {
      present = true;
      if (node === null || typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean')
        values.push(node);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const key = path[i]!;
    if (Object.hasOwn(node, key)) walk((node as Record<string, unknown>)[key], i + 1);
  };
  walk(record, 0);
  return { values, present };
}

/** Every string and number in the record (keyword searches look at all of them). */
export function allLeaves(record: unknown, out: string[] = []): string[] {
  if (typeof record === 'string') out.push(record);
  else if (typeof record === 'number' || typeof record === 'boolean') out.push(String(record));
  else if (Array.isArray(record)) for (const item of record) allLeaves(item, out);
  else if (typeof record === 'object' && record !== null)
    for (const value of Object.values(record)) allLeaves(value, out);
  return out;
}
