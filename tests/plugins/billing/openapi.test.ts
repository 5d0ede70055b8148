/**
 * The billing OpenAPI document: valid OpenAPI 3.0, served at /api/v1/billing/openapi.json, and
 * true of every operation driven through a whole hub: each answer's status is documented and
 * its body valid against the schema.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingOpenApiDocument } from '../../../src/billing/http/openapi.js';
import type { HttpMethod } from '../../../src/http/openapi.js';
import type { FakeBtcpay } from '../../fakes/btcpay/fake-btcpay.js';
import { Conformance, operationsOf } from '../../http/openapi-conformance.js';
import { type BillingHub, fakeBtcpay, startBillingHub, userToken } from './helpers.js';

const doc = billingOpenApiDocument('9.9.9');

it('is a valid OpenAPI 3.0 document', async () => {
  const result = await new Validator().validate(doc as never);
  expect(result.errors).toBeUndefined();
  expect(result.valid).toBe(true);
});

describe('the document and the billing routes agree', () => {
  let fake: FakeBtcpay;
  let t: BillingHub;
  const conformance = new Conformance(doc);

  beforeAll(async () => {
    fake = fakeBtcpay();
    await fake.start();
    t = await startBillingHub(fake, { env: { HTTP_COMPONENT_PORTS: 'billing=0,gateway=0' } });
  });
  afterAll(async () => {
    await t?.stop();
    await fake?.stop();
  });

  async function check(
    method: HttpMethod,
    template: string,
    path: string,
    init: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(`${t.baseUrl}${path}`, {
      method: method.toUpperCase(),
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const text = await res.text();
    conformance.check(method, template, { status: res.status, headers: res.headers, text });
    return text ? JSON.parse(text) : undefined;
  }

  it('serves the billing routes on the billing component port, and only there besides the main port', async () => {
    const on = (component: 'billing' | 'gateway', path: string) =>
      fetch(`http://127.0.0.1:${t.hub.http.componentPort(component)}${path}`);
    expect((await on('billing', '/api/v1/billing/plans')).status).toBe(200);
    expect((await on('gateway', '/api/v1/billing/plans')).status).toBe(404);
  });

  it('documents what every route answers', async () => {
    const served = (await (await fetch(`${t.baseUrl}/api/v1/billing/openapi.json`)).json()) as {
      paths: unknown;
    };
    expect(served.paths).toEqual(JSON.parse(JSON.stringify(billingOpenApiDocument(t.hub.version).paths)));
    const admin = await userToken(t, 'operator', ['admin']);
    const alice = await userToken(t, 'alice');
    const plans = '/api/v1/billing/plans';
    await check('post', plans, plans, {
      token: admin,
      body: { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30 },
    });
    await check('post', plans, plans, {
      token: admin,
      body: { id: 'monthly', name: 'M', price: '5', currency: 'USD', period_days: 30 },
    });
    await check('post', plans, plans, { token: admin, body: { id: 'x', price: 'five' } });
    await check('post', plans, plans, { token: alice, body: {} });
    await check('post', plans, plans, { body: {} });
    await check('get', plans, plans);
    await check('get', plans, `${plans}?all=true`, { token: admin });
    await check('get', plans, `${plans}?all=maybe`);
    await check('post', '/api/v1/billing/plans/{id}/retire', '/api/v1/billing/plans/nope/retire', {
      token: admin,
    });
    const subs = '/api/v1/billing/subscriptions';
    const sub = await check('post', subs, subs, { token: alice, body: { plan_id: 'monthly' } });
    await check('post', subs, subs, { token: alice, body: { plan_id: 'monthly' } });
    await check('post', subs, subs, { token: alice, body: { plan_id: 'nope' } });
    await check('post', subs, subs, { token: alice, raw: 'x', headers: { 'content-type': 'text/plain' } });
    fake.mode = 'error500';
    await check('post', subs, subs, { token: admin, body: { plan_id: 'monthly' } });
    fake.mode = 'ok';
    await check('get', subs, subs, { token: alice });
    await check('get', subs, `${subs}?all=true`, { token: admin });
    await check('get', subs, `${subs}?all=true`, { token: alice });
    const renew = '/api/v1/billing/subscriptions/{id}/renew';
    await check('post', renew, `${subs}/${sub.id}/renew`, { token: alice });
    await check('post', renew, `${subs}/bad/renew`, { token: alice });
    await check('post', renew, `${subs}/sub_0000000000000000/renew`, { token: alice });
    const hook = '/api/v1/billing/webhooks/btcpay';
    fake.webhookUrl = `${t.baseUrl}${hook}`;
    fake.setStatus(sub.invoice_id, 'Settled');
    const body = JSON.stringify(fake.payload(sub.invoice_id, 'InvoiceSettled'));
    const { signBody } = await import('../../../src/billing/webhook-signature.js');
    const sig = signBody('whsec-billing-test-secret', body);
    await check('post', hook, hook, { raw: body, headers: { 'BTCPay-Sig': sig } });
    await check('post', hook, hook, { raw: body, headers: { 'BTCPay-Sig': sig } });
    await check('post', hook, hook, { raw: body });
    await check('post', hook, hook, {
      raw: 'nope',
      headers: { 'BTCPay-Sig': signBody('whsec-billing-test-secret', 'nope') },
    });
    await check('post', renew, `${subs}/${sub.id}/renew`, { token: alice });
    await check('post', '/api/v1/billing/plans/{id}/retire', '/api/v1/billing/plans/monthly/retire', {
      token: admin,
    });
    expect([...conformance.covered].sort()).toEqual(operationsOf(doc).sort());
  });
});
