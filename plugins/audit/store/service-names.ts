/**
 * Service names as an administrator types and reads them (issue 14: `services=Exchange` must
 * find what `services=exchange` finds). Stored names are the normaliser's lower-case keys
 * (`exchange`, `device_management`, a Management API workload folded to `power_bi`); what a
 * person types is folded the same way — case, spaces, dots and dashes do not matter — and a
 * few product names lead to the source's key (`Entra ID`, `Intune`, `Microsoft Teams`).
 */

const DISPLAY_NAMES: Record<string, string> = {
  directory: 'Directory (Entra ID)',
  device_management: 'Device management (Intune)',
  exchange: 'Exchange',
  sharepoint: 'SharePoint',
  onedrive: 'OneDrive',
  teams: 'Teams',
};

/** Product names people use for a source, folded. */
const ALIASES: Record<string, string> = {
  entra: 'directory',
  entra_id: 'directory',
  azure_ad: 'directory',
  azureactivedirectory: 'directory',
  azure_active_directory: 'directory',
  intune: 'device_management',
  microsoftteams: 'teams',
  microsoft_teams: 'teams',
  exchange_online: 'exchange',
  sharepoint_online: 'sharepoint',
  onedrive_for_business: 'onedrive',
};

/** The stored key for a name as typed: `Exchange`, `device management`, `Device-Management`, `Intune`. */
export function serviceKey(typed: string): string {
  const folded = typed
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return ALIASES[folded] ?? folded;
}

/** How the UI shows a stored service: the product's name, else the key in words. */
export function serviceDisplayName(key: string): string {
  const known = DISPLAY_NAMES[key];
  if (known) return known;
  const words = key.replace(/_+/g, ' ').trim();
  return words ? words[0]!.toUpperCase() + words.slice(1) : key;
}

/** The services the plugin's sources store under a name of their own (PRIVACY_SERVICES names one of these). */
export const KNOWN_SERVICE_KEYS: readonly string[] = Object.keys(DISPLAY_NAMES);

/** The known services in words, for a message: `Entra ID (directory), Intune (device_management), Exchange, …`. */
export function knownServiceNames(): string {
  const product: Record<string, string> = { directory: 'Entra ID', device_management: 'Intune' };
  return KNOWN_SERVICE_KEYS.map((key) =>
    product[key] ? `${product[key]} (${key})` : DISPLAY_NAMES[key],
  ).join(', ');
}

/** The stored key of a known service as typed (`Intune`, `Entra ID`, `exchange`), else undefined. */
export function knownServiceKey(typed: string): string | undefined {
  const key = serviceKey(typed);
  return KNOWN_SERVICE_KEYS.includes(key) ? key : undefined;
}
