/**
 * The sources the audit plugin collects from (spec "What the service does": device management,
 * directory, mail, file sharing, chat) and where each one lives upstream.
 */

export type GraphSourceName = 'directory' | 'device_management';
export type ManagementSourceName = 'exchange' | 'sharepoint' | 'teams';
export type SourceName = GraphSourceName | ManagementSourceName;

export const SOURCE_NAMES: readonly SourceName[] = [
  'directory',
  'device_management',
  'exchange',
  'sharepoint',
  'teams',
];

/** Microsoft Graph collections (paged with `@odata.nextLink`, filtered on `activityDateTime`). */
export const GRAPH_COLLECTIONS: Record<GraphSourceName, string> = {
  directory: '/v1.0/auditLogs/directoryAudits',
  device_management: '/v1.0/deviceManagement/auditEvents',
};

/**
 * Office 365 Management Activity API content types. Audit.General carries Teams and every
 * other workload without a content type of its own; each event keeps its own `Workload` as
 * its service.
 */
export const CONTENT_TYPES: Record<ManagementSourceName, string> = {
  exchange: 'Audit.Exchange',
  sharepoint: 'Audit.SharePoint',
  teams: 'Audit.General',
};

export function isGraphSource(source: SourceName): source is GraphSourceName {
  return source === 'directory' || source === 'device_management';
}

export function isSourceName(value: string): value is SourceName {
  return (SOURCE_NAMES as readonly string[]).includes(value);
}
