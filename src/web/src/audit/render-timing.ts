/**
 * How long a page of events takes from its data's arrival to its rows on screen, for
 * `npm run bench -- web` (scripts/bench/web.ts; issue 15: ≤ 50 ms for 100 events). Off unless the
 * console was opened with `perf` in its URL (`/audit?limit=100&perf`): then each page leaves a
 * `performance.measure('audit-events-render')` whose detail counts the rows painted.
 */
const ON = new URLSearchParams(location.search).has('perf');
let count = 0;

/**
 * Call when a page's data has arrived, before rendering it; call what it answers right after
 * handing the data to the view. The end is taken after the next frame was painted: a task
 * queued from requestAnimationFrame runs once that frame is on screen.
 */
export function pageArrived(): (() => void) | undefined {
  if (!ON) return undefined;
  const id = ++count;
  performance.mark(`audit-data-${id}`);
  return () =>
    requestAnimationFrame(() =>
      setTimeout(() => {
        performance.mark(`audit-painted-${id}`);
        performance.measure('audit-events-render', {
          start: `audit-data-${id}`,
          end: `audit-painted-${id}`,
          detail: { rows: document.querySelectorAll('[data-testid="audit-events"] tbody tr').length },
        });
      }, 0),
    );
}
