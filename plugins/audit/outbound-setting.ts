/**
 * One outbound URL setting checked at start-up (src/http/outbound-url.ts): the Microsoft base URLs,
 * WEBHOOK_PUBLIC_URL and the alert destinations report their problem by name, with the others.
 */
import type { z } from 'zod';
import { checkOutboundUrl, OutboundUrlError } from '../../src/http/outbound-url.js';

/** The outbound URL setting `name`, when set, passes src/http/outbound-url.ts (else one problem). */
export function checkOutboundSetting(
  c: Partial<Record<string, unknown>>,
  name: string,
  allowedHosts: string[],
  ctx: z.RefinementCtx,
): void {
  const value = c[name];
  if (typeof value !== 'string') return;
  try {
    checkOutboundUrl(value, { allowedHosts });
  } catch (error) {
    ctx.addIssue({
      code: 'custom',
      path: [name],
      message: error instanceof OutboundUrlError ? error.message : 'invalid URL',
    });
  }
}
