/**
 * A saved search as an alert rule's condition (issue 29), through the whole hub: events come
 * from the loopback Microsoft fake by a real fetch, the saved search and the rule are written over
 * HTTP, alerts read back from `GET /api/alerts`. The rule fires for exactly the events the saved
 * search's filters match (its time range ignored: a rule looks at each new event), and editing
 * the saved search changes what the rule matches from the next event on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { type AlertsHub, jsonBody, startAlertsHub } from './alerts-hub.js';

const M = 60_000;
const running: AlertsHub[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop();
});

let n = 0;
const audit = (at: number, activity: string, result: string, user: string) =>
  directoryAudit(++n, at, { activity, result, user });

const alertKeys = async (h: AlertsHub) => {
  const res = await h.call('/api/alerts');
  expect(res.status).toBe(200);
  return (res.body.data as Array<{ key: string }>).map((a) => a.key).sort();
};

describe('an alert rule on a saved search', () => {
  it('fires for the events the saved search matches, and follows its edits', async () => {
    const h = await startAlertsHub();
    running.push(h);
    const saved = await h.call(
      '/api/saved-searches',
      jsonBody('POST', {
        name: 'Failed role assignments',
        // A relative range: ignored by the rule, which looks at each new event.
        filters: { services: ['Entra ID'], operation: 'member to role', result: 'failure', last: '1m' },
      }),
    );
    expect(saved.status).toBe(201);
    const rule = await h.call(
      '/api/rules',
      jsonBody('POST', {
        name: 'Saved: failed role assignments',
        condition: { saved_search: Number(saved.body.id) },
      }),
    );
    expect(rule.status).toBe(201);

    const now = Date.now();
    h.fake.directoryAudits.push(
      audit(now - 50 * M, 'Add member to role', 'failure', 'mallory@contoso.com'), // matches
      audit(now - 40 * M, 'Add member to role', 'success', 'oscar@contoso.com'), // succeeded
      audit(now - 30 * M, 'Add member to group', 'failure', 'peggy@contoso.com'), // not a role
    );
    await h.fetchNow();
    expect(await alertKeys(h)).toEqual(['mallory@contoso.com']);

    // Now the saved search wants the successful ones: the rule follows.
    const edited = await h.call(
      `/api/saved-searches/${saved.body.id}`,
      jsonBody('PUT', {
        name: 'Role assignments that worked',
        filters: { services: ['Entra ID'], operation: 'member to role', result: 'success' },
      }),
    );
    expect(edited.status).toBe(200);
    h.fake.directoryAudits.push(
      audit(now - 20 * M, 'Add member to role', 'failure', 'trudy@contoso.com'), // no longer
      audit(now - 10 * M, 'Add member to role', 'success', 'walter@contoso.com'), // now matches
    );
    await h.fetchNow();
    expect(await alertKeys(h)).toEqual(['mallory@contoso.com', 'walter@contoso.com']);

    // The saved search cannot go while the rule uses it.
    const del = await h.call(`/api/saved-searches/${saved.body.id}`, { method: 'DELETE' });
    expect(del.status).toBe(409);
    expect(del.body.detail).toContain(`alert rule ${rule.body.id} "Saved: failed role assignments"`);
  });
});
