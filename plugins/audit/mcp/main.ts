/**
 * The audit plugin's part of `meshhub mcp` (composed in hub/mcp.ts): its settings, read from the
 * same environment as the hub's, and its tools over the hub's database — the audit store, the
 * privacy gating with MCP_ROLES, and the ask tool when AI_FEATURES_ENABLED.
 */

import type { Logger } from '../../../src/log.js';
import type { McpTools } from '../../../src/mcp/tool-kit.js';
import type { Database } from '../../../src/store/database.js';
import { createAiFeatures } from '../ask/features.js';
import { PrivacyPolicy } from '../http/privacy.js';
import { type AuditConfig, loadAuditConfig } from '../settings.js';
import { AuditStore } from '../store/audit-store.js';
import { auditTools } from './tools.js';

/** The plugin's settings (a ConfigError when they are wrong), checked before the database is opened. */
export const auditMcpSettings = (env: NodeJS.ProcessEnv): AuditConfig => loadAuditConfig(env);

export async function openAuditMcp(
  config: AuditConfig,
  deps: { db: Database; log: Logger },
): Promise<{ tools: McpTools; close(): Promise<void> }> {
  const { db, log } = deps;
  const store = new AuditStore(() => db);
  const privacy = new PrivacyPolicy(config.privacy);
  const ai = config.features.aiFeaturesEnabled
    ? await createAiFeatures({ config, store, privacy, log })
    : undefined;
  return {
    tools: auditTools({
      store,
      privacy,
      ...(ai ? { ask: ai.service } : {}),
      caller: { authenticated: false, username: 'mcp', roles: [...config.ai.mcpRoles] },
      restricted: 'MCP_ROLES does not allow it',
    }),
    close: async () => {
      await ai?.backend.close();
    },
  };
}
