/**
 * ALERT_SLACK_WEBHOOK_URL's body: Block Kit through an incoming webhook — `text` (the plain
 * fallback notifications show) and `blocks`: a header with the rule's name, a section with the
 * summary and the facts as fields, a context line with the alert and, with ALERT_CONSOLE_URL, the
 * link to the event.
 *
 * Every word from an event is mrkdwn-escaped (&, <, >: Slack's control characters), so an actor or
 * operation named `<!channel>` or `<http://evil|x>` shows as written and never mentions or links.
 * Slack's limits hold whatever the input: header ≤ 150 characters, section text ≤ 3000, a field
 * ≤ 2000, at most 10 fields; a cut never splits an escape.
 */

import type { Secret } from '../../../src/config/secret.js';
import { type AlertFact, alertFacts, alertSummary, clip, eventLink, readableTime } from './chat-message.js';
import type { ApiAlert } from './schemas.js';
import type { AlertDestination } from './sender.js';

export const SLACK_LIMITS = { header: 150, sectionText: 3000, field: 2000, fields: 10 } as const;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/** `text` escaped for mrkdwn, cut (marked `…`) so that the result has at most `max` characters. */
export function mrkdwn(text: string, max = Number.POSITIVE_INFINITY): string {
  const escapeChar = (ch: string) => ESCAPES[ch] ?? ch;
  const full = text.replace(/[&<>]/g, escapeChar);
  if (full.length <= max) return full;
  let out = '';
  for (const ch of text) {
    const piece = escapeChar(ch);
    if (out.length + piece.length > max - 1) break;
    out += piece;
  }
  return `${out}…`;
}

function field({ label, value }: AlertFact) {
  const head = `*${label}*\n`;
  return { type: 'mrkdwn', text: head + mrkdwn(value, SLACK_LIMITS.field - head.length) };
}

export function slackMessage(alert: ApiAlert, consoleUrl?: string) {
  const summary = alertSummary(alert);
  const link = eventLink(consoleUrl, alert);
  const context = [
    `meshhub audit · alert ${mrkdwn(alert.id)} · fired ${mrkdwn(readableTime(alert.fired_at))}`,
    ...(link ? [`<${mrkdwn(link).replaceAll('|', '%7C')}|Open the event in the console>`] : []),
  ].join(' · ');
  return {
    text: mrkdwn(summary, SLACK_LIMITS.sectionText),
    blocks: [
      {
        type: 'header',
        text: {
          type: 'plain_text',
          text: clip(`Alert: ${alert.rule.name}`, SLACK_LIMITS.header),
          emoji: false,
        },
      },
      {
        type: 'section',
        text: { type: 'mrkdwn', text: mrkdwn(summary, SLACK_LIMITS.sectionText) },
        fields: alertFacts(alert).slice(0, SLACK_LIMITS.fields).map(field),
      },
      { type: 'context', elements: [{ type: 'mrkdwn', text: context }] },
    ],
  };
}

export function slackDestination(url: Secret, consoleUrl: string | undefined): AlertDestination {
  return {
    name: 'slack',
    url,
    format: (alert) => ({ body: JSON.stringify(slackMessage(alert, consoleUrl)) }),
  };
}
