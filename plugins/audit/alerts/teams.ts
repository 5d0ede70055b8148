/**
 * ALERT_TEAMS_WEBHOOK_URL's body: an Adaptive Card (version 1.4) in the message shape Microsoft
 * Teams takes at an incoming webhook and at a Workflows "When a Teams webhook request is
 * received" URL — `{"type":"message","attachments":[{"contentType":
 * "application/vnd.microsoft.card.adaptive","contentUrl":null,"content":{AdaptiveCard}}]}` — with
 * the rule's name, a summary line, the facts (severity, when, actor, operation, service, result,
 * target, the count within the window of a threshold rule) and, with ALERT_CONSOLE_URL, an
 * Action.OpenUrl to the event in the console.
 *
 * Text blocks and facts render a subset of Markdown: every word from an event has its Markdown
 * punctuation backslash-escaped, so an actor named `[x](https://evil)` shows as written and never
 * becomes a link. Each value is cut at 1,000 characters (a card must stay under Teams' 28 KB).
 */
import type { Secret } from '../../../src/config/secret.js';
import { alertFacts, alertSummary, clip, eventLink } from './chat-message.js';
import type { ApiAlert } from './schemas.js';
import type { AlertDestination } from './sender.js';

const VALUE_MAX = 1_000;

/** CommonMark's backslash escapes for the punctuation Adaptive Cards' Markdown acts on. */
export function markdownText(text: string): string {
  return clip(text, VALUE_MAX).replace(/[\\`*_~[\]<>]/g, '\\$&');
}

const URGENT = new Set(['high', 'critical']);

export function teamsMessage(alert: ApiAlert, consoleUrl?: string) {
  const link = eventLink(consoleUrl, alert);
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [
            {
              type: 'TextBlock',
              text: markdownText(`Alert: ${alert.rule.name}`),
              size: 'Large',
              weight: 'Bolder',
              wrap: true,
              ...(URGENT.has(alert.severity) ? { color: 'Attention' } : {}),
            },
            { type: 'TextBlock', text: markdownText(alertSummary(alert)), wrap: true, isSubtle: true },
            {
              type: 'FactSet',
              facts: alertFacts(alert).map((f) => ({ title: f.label, value: markdownText(f.value) })),
            },
          ],
          ...(link
            ? { actions: [{ type: 'Action.OpenUrl', title: 'Open the event in the console', url: link }] }
            : {}),
        },
      },
    ],
  };
}

export function teamsDestination(url: Secret, consoleUrl: string | undefined): AlertDestination {
  return {
    name: 'teams',
    url,
    format: (alert) => ({ body: JSON.stringify(teamsMessage(alert, consoleUrl)) }),
  };
}
