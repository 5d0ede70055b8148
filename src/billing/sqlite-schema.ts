/**
 * The billing plugin's tables, owned through component migrations (src/store/component-migrations.ts).
 * Times are absolute milliseconds since the epoch, so expiry is exact across restarts. The tables
 * are defined in billing-tables.ts, once for the hub and the upstream.
 */
import type { ComponentMigration } from '../store/component-migrations.js';
import { billingTablesDdl } from './billing-tables.js';

export const BILLING_COMPONENT = 'billing';

export const BILLING_MIGRATIONS: readonly ComponentMigration[] = [
  {
    version: 1,
    name: 'plans, subscriptions, invoices, changes, deliveries',
    up: billingTablesDdl('sqlite'),
  },
];
