/** `/api/rules` and `/api/alerts` in the audit plugin's OpenAPI document. */
import { z } from 'zod';
import {
  COMMON_PROBLEMS,
  type OperationSpec,
  problem,
  type ResponseSpec,
} from '../../../src/http/openapi.js';
import { ruleBodySchema } from './condition.js';
import { alertsQuerySchema } from './query.js';
import { alertPageSchema, alertSchema, ruleListSchema, ruleSchema } from './schemas.js';

const { badInput, tooLarge, notJson } = COMMON_PROBLEMS;
const idPath = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/)
    .meta({ description: 'A decimal id.' }),
});

export function alertOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  // Rules are read with a reader role (`signedIn` says so) and written with an admin role.
  const reader = signedIn;
  const admin = {
    ...signedIn,
    403: problem(
      'This needs an administrator role (AUDIT_ADMIN_ROLES, default `admin`); `access` (`admin`) and `roles` say which.',
    ),
  };
  const noRule = problem('No rule with this id.');
  const clash = problem(
    'Another rule has this name (names are unique, case-insensitive); `errors` names `name`.',
  );
  const ruleBody = {
    schema: ruleBodySchema,
    description:
      'Every object is strict: an unknown field is a 400 naming it (`condition.actor.regex`). Text matches are literal and case-insensitive; there are no patterns.',
  };
  return [
    {
      method: 'get',
      path: '/api/rules',
      operationId: 'listRules',
      tag: 'alerts',
      summary: 'Every alert rule',
      security: 'optional-bearer',
      responses: { 200: { description: 'The rules, oldest first.', body: ruleListSchema }, ...reader },
    },
    {
      method: 'post',
      path: '/api/rules',
      operationId: 'createRule',
      tag: 'alerts',
      summary: 'Create an alert rule (it applies to the next stored event)',
      security: 'optional-bearer',
      body: ruleBody,
      responses: {
        201: {
          description: 'The rule.',
          body: ruleSchema,
          headers: { Location: { description: '`/api/rules/{id}`.' } },
        },
        400: badInput,
        ...admin,
        409: clash,
        413: tooLarge,
        415: notJson,
        422: problem('There are 500 rules already.'),
      },
    },
    {
      method: 'get',
      path: '/api/rules/{id}',
      operationId: 'getRule',
      tag: 'alerts',
      summary: 'One alert rule',
      security: 'optional-bearer',
      params: { path: idPath },
      responses: {
        200: { description: 'The rule.', body: ruleSchema },
        400: badInput,
        ...reader,
        404: noRule,
      },
    },
    {
      method: 'put',
      path: '/api/rules/{id}',
      operationId: 'replaceRule',
      tag: 'alerts',
      summary: 'Replace an alert rule (a changed condition starts its threshold counts afresh)',
      security: 'optional-bearer',
      params: { path: idPath },
      body: ruleBody,
      responses: {
        200: { description: 'The rule afterwards.', body: ruleSchema },
        400: badInput,
        ...admin,
        404: noRule,
        409: clash,
        413: tooLarge,
        415: notJson,
      },
    },
    {
      method: 'delete',
      path: '/api/rules/{id}',
      operationId: 'deleteRule',
      tag: 'alerts',
      summary: 'Delete an alert rule (its alerts stay)',
      security: 'optional-bearer',
      params: { path: idPath },
      responses: { 204: { description: 'Deleted.' }, 400: badInput, ...admin, 404: noRule },
    },
    {
      method: 'get',
      path: '/api/alerts',
      operationId: 'searchAlerts',
      tag: 'alerts',
      summary: 'Alerts, newest first, with cursor paging both ways',
      security: 'optional-bearer',
      params: { query: alertsQuerySchema },
      responses: { 200: { description: 'One page.', body: alertPageSchema }, 400: badInput, ...admin },
    },
    {
      method: 'get',
      path: '/api/alerts/{id}',
      operationId: 'getAlert',
      tag: 'alerts',
      summary: 'One alert',
      security: 'optional-bearer',
      params: { path: idPath },
      responses: {
        200: { description: 'The alert.', body: alertSchema },
        400: badInput,
        ...admin,
        404: problem('No alert with this id.'),
      },
    },
  ];
}
