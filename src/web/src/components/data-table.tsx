/** A table with a caption and a header row, in a scrolling wrapper. */
import type { ComponentChildren } from 'preact';

export function DataTable({
  wrapClass,
  tableClass,
  caption,
  captionClass,
  testId,
  columns,
  children,
}: {
  wrapClass: string;
  tableClass: string;
  caption: string;
  /** E.g. visually-hidden, for a caption only screen readers need. */
  captionClass?: string;
  testId?: string;
  columns: readonly string[];
  /** The rows. */
  children: ComponentChildren;
}) {
  return (
    <div class={wrapClass}>
      <table class={tableClass} data-testid={testId}>
        <caption class={captionClass}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
