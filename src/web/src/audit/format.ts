/** Times and outcomes as the console shows them (browser time zone; ISO UTC in the tooltip). */
const timeFormat = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

export const shownTime = (iso: string | null | undefined): string =>
  iso ? timeFormat.format(new Date(iso)) : '—';

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
