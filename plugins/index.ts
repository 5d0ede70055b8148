/**
 * The plugins the hub knows, loaded lazily: only those named in PLUGINS are ever imported.
 * Each entry is a folder under plugins/ exporting one module (src/module.ts): adding a plugin is
 * one folder and one line here.
 */
import type { HubModule } from '../src/module.js';

export const KNOWN_PLUGINS: Record<string, () => Promise<HubModule>> = {
  audit: async () => (await import('./audit/index.js')).auditModule,
  billing: async () => (await import('./billing/index.js')).billingModule,
};

export class UnknownPluginError extends Error {
  override readonly name = 'UnknownPluginError';
}

export async function loadPlugins(names: string[]): Promise<HubModule[]> {
  const unknown = names.filter((n) => !Object.hasOwn(KNOWN_PLUGINS, n));
  if (unknown.length) {
    const known = Object.keys(KNOWN_PLUGINS);
    throw new UnknownPluginError(
      `PLUGINS: unknown plugin ${unknown.map((n) => `"${n}"`).join(', ')} (known: ${known.length ? known.join(', ') : 'none yet'})`,
    );
  }
  return Promise.all(names.map((n) => KNOWN_PLUGINS[n]!()));
}
