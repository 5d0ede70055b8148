/**
 * Records shaped like the samples in Microsoft's documentation, varied by index and time:
 * - directoryAudit: "List directoryAudits", example 1 response (learn.microsoft.com/graph/api/directoryaudit-list)
 * - Intune auditEvent: "List auditEvents" example response (learn.microsoft.com/graph/api/intune-auditing-auditevent-list)
 * - Management Activity API records: "Retrieve content" sample response, common schema
 *   (learn.microsoft.com/office/office-365-management-api/office-365-management-activity-api-reference)
 */

const ORG = '41463f53-8812-40f4-890f-865bf6e35190';

/** A GUID derived from a number, stable across runs. */
export function guid(n: number, salt = 0): string {
  const h = ((n * 2654435761) ^ (salt * 40503)) >>> 0;
  const hex = (n.toString(16).padStart(12, '0') + h.toString(16).padStart(8, '0')).slice(-20);
  return `${h.toString(16).padStart(8, '0')}-${hex.slice(0, 4)}-4${hex.slice(5, 8)}-8${hex.slice(9, 12)}-${hex.slice(8, 20)}`;
}

/** Graph's activityDateTime: 7 fractional digits and Z, as in the sample. */
export const graphTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$10000Z');

export function directoryAudit(
  i: number,
  at: number,
  over: { activity?: string; result?: string; user?: string; app?: string } = {},
): Record<string, unknown> {
  return {
    id: `Directory_${guid(i, 1)}_${i}`,
    category: 'UserManagement',
    correlationId: guid(i, 2),
    result: over.result ?? 'success',
    resultReason: 'Successfully added member to group',
    activityDisplayName: over.activity ?? 'Add member to group',
    activityDateTime: graphTime(at),
    loggedByService: 'Core Directory',
    initiatedBy: over.app
      ? { user: null, app: { appId: guid(i, 3), displayName: over.app, servicePrincipalId: guid(i, 4) } }
      : {
          user: {
            id: '728309ae-1a37-4937-9afe-e35d964db09b',
            displayName: 'Audry Oliver',
            userPrincipalName: over.user ?? 'bob@wingtiptoysonline.com',
            ipAddress: '127.0.0.1',
          },
          app: null,
        },
    targetResources: [
      {
        id: 'ef7e527d-6c92-4234-8c6d-cf6fdfb57f95',
        displayName: 'Example.com',
        Type: 'Group',
        modifiedProperties: [
          { displayName: 'Action Client Name', oldValue: null, newValue: 'DirectorySync' },
        ],
        groupType: 'unifiedGroups',
      },
      {
        id: '1f0e98f5-3161-4c6b-9b50-d488572f2bb7',
        displayName: null,
        Type: 'User',
        modifiedProperties: [],
        userPrincipalName: 'bob@contoso.com',
      },
    ],
    additionalDetails: [{ key: 'Additional Detail Name', value: 'Additional Detail Value' }],
  };
}

export function intuneAuditEvent(
  i: number,
  at: number,
  over: { actorType?: 'Application' | 'ItPro'; app?: string; user?: string; result?: string } = {},
): Record<string, unknown> {
  const offset = new Date(at - 8 * 3_600_000).toISOString().replace(/\.(\d{3})Z$/, '.$10000-08:00');
  return {
    '@odata.type': '#microsoft.graph.auditEvent',
    id: guid(i, 5),
    displayName: 'Create DeviceConfiguration',
    componentName: 'DeviceConfiguration',
    actor: {
      '@odata.type': 'microsoft.graph.auditActor',
      type: over.actorType === 'Application' ? 'Application' : 'ItPro',
      auditActorType: over.actorType ?? 'ItPro',
      userPermissions: ['*'],
      applicationId: guid(i, 6),
      applicationDisplayName: over.app ?? 'Microsoft Intune portal extension',
      userPrincipalName:
        over.actorType === 'Application' ? null : (over.user ?? 'admin@contoso.onmicrosoft.com'),
      servicePrincipalName: over.actorType === 'Application' ? over.app : null,
      ipAddress: '134.170.188.221',
      userId: guid(i, 7),
    },
    activity: 'Create DeviceConfiguration',
    activityDateTime: offset,
    activityType: 'Create DeviceConfiguration',
    activityOperationType: 'Create',
    activityResult: over.result ?? 'Success',
    correlationId: guid(i, 8),
    resources: [
      {
        '@odata.type': 'microsoft.graph.auditResource',
        displayName: 'Windows 10 baseline',
        modifiedProperties: [],
        type: 'DeviceConfiguration',
        auditResourceType: 'DeviceConfiguration',
        resourceId: guid(i, 9),
      },
    ],
    category: 'DeviceConfiguration',
  };
}

/** Management Activity API time: seconds, UTC, no zone designator (as in the sample). */
export const managementRecordTime = (ms: number) => new Date(ms).toISOString().slice(0, 19);

const WORKLOADS: Record<string, { workload: string; operation: string; record: number }> = {
  'Audit.Exchange': { workload: 'Exchange', operation: 'MailItemsAccessed', record: 50 },
  'Audit.SharePoint': { workload: 'SharePoint', operation: 'FileAccessed', record: 6 },
  'Audit.General': { workload: 'MicrosoftTeams', operation: 'MemberAdded', record: 25 },
};

export function managementRecord(
  contentType: string,
  i: number,
  at: number,
  over: { operation?: string; user?: string; result?: string | null; id?: string } = {},
): Record<string, unknown> {
  const w = WORKLOADS[contentType] ?? {
    workload: 'AzureActiveDirectory',
    operation: 'UserLoggedIn',
    record: 15,
  };
  const record: Record<string, unknown> = {
    CreationTime: managementRecordTime(at),
    Id: over.id ?? guid(i, 10),
    Operation: over.operation ?? w.operation,
    OrganizationId: ORG,
    RecordType: w.record,
    UserKey: '1153977025279851686@contoso.onmicrosoft.com',
    UserType: 0,
    Workload: w.workload,
    ClientIP: '134.170.188.221',
    ObjectId:
      w.workload === 'SharePoint'
        ? `https://contoso.sharepoint.com/sites/finance/Shared Documents/report-${i}.xlsx`
        : `admin@contoso.onmicrosoft.com`,
    UserId: over.user ?? 'admin@contoso.onmicrosoft.com',
  };
  if (over.result !== null) record.ResultStatus = over.result ?? 'Succeeded';
  return record;
}
