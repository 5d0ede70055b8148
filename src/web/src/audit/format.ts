/**
 * Times and outcomes as the console shows them (browser time zone, written the way the language
 * in use writes dates; ISO UTC in the tooltip).
 */
import { currentLocale } from '../i18n/index.js';

const formats = new Map<string, Intl.DateTimeFormat>();
function timeFormat(): Intl.DateTimeFormat {
  const locale = currentLocale();
  let format = formats.get(locale);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, {
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(locale, format);
  }
  return format;
}

export const shownTime = (iso: string | null | undefined): string =>
  iso ? timeFormat().format(new Date(iso)) : '—';

/**
 * The style of a result: the API normalises `success`, `succeeded` and `true` to `success`
 * (spec "Event": success and succeeded both styled as success); the raw word is what is shown.
 */
export function outcomeClass(result: string): string {
  return result === 'success'
    ? 'outcome outcome-success'
    : result === 'failure'
      ? 'outcome outcome-failure'
      : 'outcome outcome-unknown';
}
