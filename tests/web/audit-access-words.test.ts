/**
 * The audit console's words for the hub's role check (issue 23): a 403 naming `access` and
 * `roles` becomes "not allowed" in plain words with the role to ask for; other 403s (a
 * privacy-gated event) keep their own reason. The whole console: tests/e2e/audit-console-auth.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { accessWords } from '../../src/web/src/audit/access-words.js';
import { apiErrorFrom } from '../../src/web/src/lib/problem.js';

const refused = (members: Record<string, unknown>, detail = 'your account is not allowed') =>
  apiErrorFrom(403, { type: 'about:blank', title: 'Forbidden', status: 403, detail, ...members }, undefined);

describe('accessWords for a 403', () => {
  it('says a reader role is missing, and names the auditor role', () => {
    expect(accessWords(refused({ access: 'read', roles: ['admin', 'auditor'] }))).toBe(
      'Your account is not allowed to read audit events. Ask an administrator for the auditor role.',
    );
  });

  it('says changes need the admin role', () => {
    expect(accessWords(refused({ access: 'admin', roles: ['admin'] }))).toBe(
      'Your account may not change audit data (tags, comments, rules), fetch, or see the trail and alerts. Ask an administrator for the admin role.',
    );
  });

  it('names the roles the hub was given when they are its own', () => {
    expect(accessWords(refused({ access: 'read', roles: ['Audit.Reader', 'Audit.Admin'] }))).toBe(
      'Your account is not allowed to read audit events. Ask an administrator for one of these roles: Audit.Reader, Audit.Admin.',
    );
    expect(accessWords(refused({ access: 'admin', roles: ['Audit.Admin'] }))).toMatch(
      /Ask an administrator for the Audit\.Admin role\.$/,
    );
  });

  it('leaves another 403 (a privacy-gated event) to its own reason', () => {
    expect(
      accessWords(refused({}, 'this event is restricted; your role does not allow you to see it')),
    ).toBeUndefined();
  });
});
