/**
 * What the audit plugin offers this caller (`/api/config/features`: AI, alerts, export formats)
 * and the filters' suggestions (`/api/filter-options`, already without privacy-gated values the
 * caller may not see). Read when the console opens; the suggestions again after tagging.
 */
import { createStore } from '../lib/store.js';
import { auditJson } from './audit-api.js';
import type { AuditFeatures, FilterOptions } from './audit-types.js';

export interface AuditFeaturesState {
  features?: AuditFeatures;
  options?: FilterOptions;
  error?: unknown;
}

export const auditFeaturesStore = createStore<AuditFeaturesState>({});
let loading: Promise<void> | undefined;

export function loadFeatures(): Promise<void> {
  loading ??= Promise.all([
    auditJson<AuditFeatures>('/api/config/features'),
    auditJson<FilterOptions>('/api/filter-options'),
  ]).then(
    ([features, options]) => auditFeaturesStore.set({ features, options }),
    (error: unknown) => {
      loading = undefined;
      auditFeaturesStore.set((s) => ({ ...s, error }));
    },
  );
  return loading;
}

/** After a tag change: new tags become suggestions. */
export function refreshOptions(): void {
  auditJson<FilterOptions>('/api/filter-options').then(
    (options) => auditFeaturesStore.set((s) => ({ ...s, options })),
    () => {},
  );
}
