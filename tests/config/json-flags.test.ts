/**
 * A CONFIG_FILE is JSON, so a flag may be a JSON `true` or `false` rather than a string: every
 * settings schema (the hub's and each plugin's slice) reads flags with src/config/fields.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHubSettings } from '../../hub/settings.js';
import { auditSettings } from '../../plugins/audit/settings.js';
import { billingSettings } from '../../src/billing/settings.js';

const configFile = (values: Record<string, unknown>): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'meshhub-flags-')), 'config.json');
  writeFileSync(file, JSON.stringify(values));
  return file;
};

describe('flags in CONFIG_FILE', () => {
  it('accepts JSON true and false in the hub and in the plugins', () => {
    const file = configFile({
      AUTH_JWKS_ALLOW_PRIVATE_NETWORK: true,
      AUDIT_FETCH_ON_START: false,
      ALERTS_ENABLED: true,
      ALERT_ALLOW_PRIVATE_NETWORK: true,
      LLM_ALLOW_PRIVATE_NETWORK: true,
      SIEM_ALLOW_PRIVATE_NETWORK: true,
      BTCPAY_URL: 'https://btcpay.example.org',
      BTCPAY_STORE_ID: 'store',
      BTCPAY_API_KEY: 'key',
      BTCPAY_WEBHOOK_SECRET: 'a-webhook-secret',
      BTCPAY_ALLOW_PRIVATE_NETWORK: true,
    });
    const { config, slices } = loadHubSettings({ CONFIG_FILE: file }, [
      { name: 'audit', settings: auditSettings },
      { name: 'billing', settings: billingSettings },
    ]);
    expect(config.AUTH_JWKS_ALLOW_PRIVATE_NETWORK).toBe(true);
    expect(slices.get('audit')).toMatchObject({
      AUDIT_FETCH_ON_START: false,
      ALERTS_ENABLED: true,
      ALERT_ALLOW_PRIVATE_NETWORK: true,
      LLM_ALLOW_PRIVATE_NETWORK: true,
      SIEM_ALLOW_PRIVATE_NETWORK: true,
    });
    expect(slices.get('billing')).toMatchObject({ BTCPAY_ALLOW_PRIVATE_NETWORK: true });
  });
});
