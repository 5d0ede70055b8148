/** The running hub publishes its API descriptions: always the JSON, the HTML page only with API_DOCS. */
import { afterEach, describe, expect, it } from 'vitest';
import { getJson, startTestHub, type TestHub } from '../helpers/hub.js';

let t: TestHub | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('API descriptions on a running hub', () => {
  it('serves the mesh document at /api/v1/openapi.json, and no docs page by default', async () => {
    t = await startTestHub({ RADIO: 'none' });
    const doc = await getJson(`${t.baseUrl}/api/v1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
    expect(doc.body.info.version).toBe(t.hub.version);
    expect(Object.keys(doc.body.paths)).toContain('/api/v1/weather/history');
    expect((await fetch(`${t.baseUrl}/api/v1/docs`)).status).toBe(404);
    expect((await fetch(`${t.baseUrl}/api/openapi.json`)).status).toBe(404);
  });

  it('serves the docs page with API_DOCS=true, and the audit document when its plugin runs', async () => {
    t = await startTestHub({
      RADIO: 'none',
      API_DOCS: 'true',
      PLUGINS: 'audit',
      AUDIT_FETCH_ON_START: 'false',
    });
    const page = await fetch(`${t.baseUrl}/api/v1/docs`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/api/v1/messages');
    const audit = await getJson(`${t.baseUrl}/api/openapi.json`);
    expect(audit.status).toBe(200);
    expect(Object.keys(audit.body.paths)).toContain('/api/events');
    expect((await fetch(`${t.baseUrl}/api/docs`)).status).toBe(200);
  });
});
